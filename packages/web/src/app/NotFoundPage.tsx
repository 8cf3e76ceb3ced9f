import { Link } from 'react-router';
import { usePageTitle } from '../lib/usePageTitle';

export function NotFoundPage() {
  usePageTitle('Not found');
  return (
    <>
      <h1>Not found</h1>
      <p className="empty">There is no page here. <Link to="/">Go to the overview</Link>.</p>
    </>
  );
}
