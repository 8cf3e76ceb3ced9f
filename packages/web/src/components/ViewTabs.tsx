import { Link, useSearchParams } from 'react-router';

/**
 * Tabs choosing a view of one screen through the URL's `view` parameter (the first is the default
 * and leaves it out), so a view can be linked and survives a reload; the other parameters are kept.
 */
export function ViewTabs<V extends string>({ views, current }: { views: readonly (readonly [V, string])[]; current: V }) {
  const [params] = useSearchParams();
  return (
    <div role="tablist" aria-label="Show" className="tabs">
      {views.map(([v, label], i) => {
        const next = new URLSearchParams(params);
        if (i === 0) next.delete('view');
        else next.set('view', v);
        return <Link key={v} role="tab" aria-selected={current === v} className={current === v ? 'tab active' : 'tab'} to={`?${next}`}>{label}</Link>;
      })}
    </div>
  );
}
