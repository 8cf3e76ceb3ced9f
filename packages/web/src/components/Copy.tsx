import { useRef, useState } from 'react';

/** A button that copies `text` to the clipboard and says so; where the clipboard is refused, `onRefused` (select the text: Ctrl+C copies it). */
export function CopyButton({ text, label = 'Copy', onRefused }: { text: string; label?: string; onRefused?: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
    } catch {
      onRefused?.();
      setCopied(false);
    }
  };
  return <button type="button" onClick={() => void copy()}>{copied ? 'Copied' : label}</button>;
}

/** A secret shown once: read-only, selected on focus, and a copy button beside it (the caller's `copy-row` lays them out). */
export function CopyField({ label, value, copyLabel }: { label: string; value: string; copyLabel?: string }) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <>
      <label>
        {label}
        <input ref={input} readOnly value={value} className="mono" onFocus={(e) => e.target.select()} />
      </label>
      <CopyButton
        text={value}
        {...(copyLabel ? { label: copyLabel } : {})}
        onRefused={() => {
          // Focused and selected: Ctrl+C copies it.
          input.current?.focus();
          input.current?.select();
        }}
      />
    </>
  );
}
