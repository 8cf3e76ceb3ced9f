import type { Page } from 'playwright-core';

// biome-ignore lint: in-page element
type Element = any;

// The test programs are typed without the DOM library (it clashes with Node's fetch types); the
// in-page code below sees these globals, typed as loosely as it uses them.
// biome-ignore lint: in-page globals
declare const document: any, getComputedStyle: (e: unknown) => any, NodeFilter: { SHOW_TEXT: number };

// Checks the console's e2e tests run on a rendered screen: text contrast (WCAG 2 AA) and controls
// without an accessible name. Both run in the page on what is visible at that moment.

export interface LowContrast {
  text: string;
  ratio: number;
  color: string;
  background: string;
}

/**
 * Every visible text run whose colour against its effective background (the first opaque
 * background among its ancestors, partly transparent ones blended over it) is below WCAG AA:
 * 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold). Disabled controls are exempt, as in WCAG.
 */
export function lowContrast(p: Page): Promise<LowContrast[]> {
  return p.evaluate(() => {
    type RGBA = [number, number, number, number];
    const probe = document.createElement('canvas').getContext('2d', { willReadFrequently: true });
    if (!probe) throw new Error('no 2d canvas');
    // Any CSS colour (rgb(), color(srgb …), oklch(), color-mix() results) to sRGB bytes through a canvas pixel.
    const parse = (css: string): RGBA => {
      probe.clearRect(0, 0, 1, 1);
      probe.fillStyle = '#000';
      probe.fillStyle = css;
      probe.fillRect(0, 0, 1, 1);
      const [r = 0, g = 0, b = 0, a = 0] = probe.getImageData(0, 0, 1, 1).data;
      return [r, g, b, a / 255];
    };
    const over = (top: RGBA, under: RGBA): RGBA => [0, 1, 2].map((i) => top[i]! * top[3] + under[i]! * (1 - top[3])).concat(1) as RGBA;
    const lum = ([r, g, b]: RGBA) => {
      const c = (v: number) => {
        const s = v / 255;
        return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b);
    };
    const background = (el: Element | null): RGBA => {
      const layers: RGBA[] = [];
      for (let e = el; e; e = e.parentElement as Element | null) {
        const bg = parse(getComputedStyle(e).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] === 1) break;
      }
      let acc: RGBA = parse(getComputedStyle(document.documentElement).backgroundColor);
      if (acc[3] < 1) acc = over(acc, [255, 255, 255, 1]);
      for (const l of layers.reverse()) acc = over(l, acc);
      return acc;
    };
    const found: { text: string; ratio: number; color: string; background: string }[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = n.textContent?.trim();
      const el = n.parentElement;
      if (!text || !el) continue;
      if (el.closest('[disabled], :disabled, .sr-only, option, [aria-hidden="true"]')) continue;
      const style = getComputedStyle(el);
      const box = el.getBoundingClientRect();
      if (style.visibility !== 'visible' || box.width === 0 || box.height === 0 || el.checkVisibility?.({ opacityProperty: true }) === false) continue;
      // An off-screen skip link is visible only once focused.
      if (box.right < 0 || box.bottom < 0) continue;
      const bg = background(el);
      const fg = over(parse(style.color), bg);
      const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a) as [number, number];
      const ratio = (hi + 0.05) / (lo + 0.05);
      const size = Number.parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) found.push({ text: text.slice(0, 60), ratio: Math.round(ratio * 100) / 100, color: style.color, background: `rgb(${bg.slice(0, 3).join(' ')})` });
    }
    return found;
  });
}

/**
 * Form controls and buttons (and links) with no accessible name, from Chromium's accessibility
 * tree: what a screen reader would announce as just "button" or "edit text".
 */
export async function unnamedControls(p: Page): Promise<string[]> {
  const session = await p.context().newCDPSession(p);
  try {
    const { nodes } = (await session.send('Accessibility.getFullAXTree')) as { nodes: { ignored: boolean; role?: { value: string }; name?: { value: string } }[] };
    const controls = new Set(['button', 'textbox', 'searchbox', 'combobox', 'checkbox', 'radio', 'spinbutton', 'slider', 'switch', 'link', 'menuitem', 'tab', 'listbox']);
    return nodes
      .filter((n) => !n.ignored && controls.has(n.role?.value ?? '') && !(n.name?.value ?? '').trim())
      .map((n) => n.role?.value ?? '?');
  } finally {
    await session.detach();
  }
}
