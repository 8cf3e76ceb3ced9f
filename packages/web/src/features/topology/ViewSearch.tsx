import { type KeyboardEvent, useEffect, useId, useRef, useState } from 'react';
import { useDebounced } from '../../lib/useDebounced';
import { useViewSearch } from './api';

export type Found = NonNullable<ReturnType<typeof useViewSearch>['data']>['data'][number];

/**
 * The toolbar's search of one view (`GET /api/v1/topology/{id}/search`, typing paused 250 ms): a
 * name, an address (its start) or a service; closed groups included. Arrows move through the
 * results, Enter or a click picks one, Escape closes the list.
 */
export function ViewSearch({ viewId, onPick }: { viewId: string; onPick: (found: Found) => void }) {
  const [text, setText] = useState('');
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const input = useRef<HTMLInputElement>(null);
  const id = useId();
  const q = useDebounced(text.trim(), 250);
  const result = useViewSearch(viewId, q);
  // Results of an earlier term are not offered (Enter would pick one of them).
  const items = q === text.trim() && !result.isPlaceholderData ? (result.data?.data ?? []) : [];
  useEffect(() => setActive(-1), [result.data]);
  const shown = open && text.trim().length > 0;

  const pick = (f: Found | undefined) => {
    if (!f) return;
    setOpen(false);
    setText(f.label);
    onPick(f);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setOpen(true);
      if (!items.length) return;
      const step = e.key === 'ArrowDown' ? 1 : -1;
      setActive((a) => (a < 0 && step < 0 ? items.length - 1 : (a + step + items.length) % items.length));
    } else if (e.key === 'Enter') {
      e.preventDefault();
      pick(items[active < 0 ? 0 : active]);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      if (shown) setOpen(false);
      else setText('');
    }
  };
  const option = (i: number) => `${id}-o${i}`;
  return (
    <div className="field topo-search">
      <label htmlFor={`${id}-q`}>Find in view</label>
      <input
        ref={input}
        id={`${id}-q`}
        type="search"
        role="combobox"
        aria-expanded={shown}
        aria-controls={`${id}-list`}
        aria-autocomplete="list"
        aria-activedescendant={shown && active >= 0 ? option(active) : undefined}
        placeholder="Name, address or service"
        autoComplete="off"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        onBlur={() => setOpen(false)}
        onKeyDown={onKeyDown}
      />
      <div id={`${id}-list`} role="listbox" aria-label="Nodes found" className="search-results" hidden={!shown}>
        {shown && items.length === 0 && !result.error && <p className="hint">{result.isFetching || q !== text.trim() ? 'Searching…' : `Nothing in this view matches “${text.trim()}”.`}</p>}
        {shown && result.error && <p className="error-text">{result.error.message}</p>}
        {shown &&
          items.map((f, i) => (
            <div
              key={f.nodeId}
              id={option(i)}
              role="option"
              aria-selected={i === active}
              className={`search-item${i === active ? ' active' : ''}`}
              onMouseDown={(e) => e.preventDefault()}
              onMouseEnter={() => setActive(i)}
              onClick={() => pick(f)}
            >
              <span className="search-label">{f.label}</span>
              <span className="search-detail">{[f.addresses.slice(0, 2).join(', '), f.matched !== f.label && !f.addresses.includes(f.matched) ? f.matched : '', f.kind === 'host' ? '' : f.kind].filter(Boolean).join(' · ')}</span>
            </div>
          ))}
      </div>
    </div>
  );
}
