import { type KeyboardEvent, useCallback } from 'react';

// Keyboard focus for the console's dialogs and reveal-once panels: where focus goes when one opens,
// how Tab stays inside a modal, and where focus goes back to when it closes.

const TABBABLE = 'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** The elements Tab stops at inside `root`, in document order (hidden ones left out). */
export function tabbables(root: ParentNode): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(TABBABLE)].filter((el) => !el.closest('[hidden], [inert]') && el.getClientRects().length > 0);
}

/** A keydown handler for a modal: Tab past the last control goes to the first, Shift+Tab before the first to the last. */
export function trapTab(e: KeyboardEvent<HTMLElement>): void {
  if (e.key !== 'Tab') return;
  const stops = tabbables(e.currentTarget);
  const first = stops[0];
  const last = stops.at(-1);
  if (!first || !last) {
    e.preventDefault();
    return;
  }
  const active = document.activeElement;
  if (e.shiftKey && (active === first || !e.currentTarget.contains(active))) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && (active === last || !e.currentTarget.contains(active))) {
    e.preventDefault();
    first.focus();
  }
}

/** Focuses the page's main region (it has tabindex="-1"): the next Tab continues in the page. */
function focusMain(): void {
  document.getElementById('main')?.focus();
}

/**
 * Gives focus back to `opener` (the control that opened a dialog or panel) when it is still on the
 * page and can take it; otherwise to the page's main region, so focus never falls to the body. When
 * the opener goes away while it still has focus (a "Revoke" button replaced by "revoked" once the
 * list refreshes), focus moves on to the main region then.
 */
export function returnFocus(opener: Element | null): void {
  if (opener instanceof HTMLElement && opener.isConnected && opener !== document.body) {
    opener.focus();
    if (document.activeElement === opener) {
      followRemoval(opener);
      return;
    }
  }
  focusMain();
}

function followRemoval(el: HTMLElement): void {
  const stop = () => {
    observer.disconnect();
    el.removeEventListener('blur', onBlur);
  };
  const check = () => {
    if (el.isConnected) return false;
    stop();
    if (!document.activeElement || document.activeElement === document.body) focusMain();
    return true;
  };
  // Chromium blurs an element it removes; others do not: a mutation observer sees the removal there.
  const onBlur = () => queueMicrotask(() => check() || (document.activeElement !== el && stop()));
  const observer = new MutationObserver(() => void check());
  observer.observe(document.body, { childList: true, subtree: true });
  el.addEventListener('blur', onBlur);
}

/**
 * For a panel shown once after an action (a minted key, a one-time password, an enrolment
 * command): spread on its `<section>`. It takes focus when it appears (so a screen reader reads it
 * and the keyboard starts there), Escape closes it, and closing gives focus back to what had it
 * before (the form's submit button), or to the main region.
 */
export function useRevealPanel(onClose: () => void) {
  // A callback ref with a cleanup (React 19): runs when the panel leaves the page, whichever component holds it.
  const ref = useCallback((el: HTMLElement | null) => {
    if (!el) return;
    const opener = document.activeElement;
    el.focus();
    return () => returnFocus(opener);
  }, []);
  return {
    ref,
    tabIndex: -1,
    onKeyDown: (e: KeyboardEvent<HTMLElement>) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        onClose();
      }
    },
  };
}
