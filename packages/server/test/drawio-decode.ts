/**
 * Decodes a draw.io file with a real decoder of its format: maxGraph's Codec (@maxgraph/core, the
 * maintained TypeScript successor of JGraph's mxGraph, whose mxGraphModel XML draw.io writes),
 * the decoder maxGraph itself uses to import a model (ModelXmlSerializer), run in Node over
 * happy-dom's DOM (maxGraph is a browser library: DOMParser, document, navigator).
 *
 * The `<mxGraphModel>` of the file's first `<diagram>` is decoded into a GraphDataModel; a diagram
 * saved compressed (draw.io's default: raw deflate, then base64, of the URI-encoded XML) is
 * inflated first. Our exports write it uncompressed.
 *
 * maxGraph's Codec does not reject a dangling reference: an edge whose `source` or `target` names
 * no cell decodes with no terminal, and a cell whose `parent` names no cell decodes without a
 * parent (the model codec then takes it for the root). So after decoding, this helper checks the
 * model against the document: every `parent`, `source` and `target` attribute must have been
 * decoded into that very cell, every cell but the root must sit in the model's tree, and ids must
 * be unique; otherwise it throws.
 */
import { inflateRawSync } from 'node:zlib';

export interface DecodedVertex {
  id: string;
  value: string;
  parent: string | null;
  geometry: { x: number; y: number; width: number; height: number };
  style: string;
}
export interface DecodedEdge { id: string; value: string; source: string | null; target: string | null; parent: string | null }
export interface DecodedDiagram { vertices: DecodedVertex[]; edges: DecodedEdge[] }

type MaxGraph = typeof import('@maxgraph/core');
/** What this helper reads of happy-dom's XML DOM (the tests compile without the DOM library). */
interface XmlElement {
  nodeName: string;
  nodeType: number;
  textContent: string | null;
  childNodes: ArrayLike<XmlElement>;
  attributes: ArrayLike<{ nodeName: string; name: string }>;
  ownerDocument: XmlDocument;
  getAttribute(name: string): string | null;
  getElementsByTagName(name: string): ArrayLike<XmlElement>;
}
interface XmlDocument { documentElement: XmlElement | null; getElementsByTagName(name: string): ArrayLike<XmlElement> }
interface XmlParser { parseFromString(text: string, type: 'text/xml'): XmlDocument }
let loaded: Promise<{ mx: MaxGraph; parser: XmlParser }> | undefined;

/** maxGraph over happy-dom's window (its globals set once, before maxGraph loads). */
function maxGraph(): Promise<{ mx: MaxGraph; parser: XmlParser }> {
  loaded ??= (async () => {
    const { Window } = await import('happy-dom');
    const window = new Window();
    const g = globalThis as Record<string, unknown>;
    for (const name of ['window', 'document', 'navigator', 'DOMParser', 'XMLSerializer', 'Node', 'Element', 'XMLDocument', 'HTMLElement']) {
      if (g[name] === undefined) g[name] = name === 'window' ? window : (window as unknown as Record<string, unknown>)[name];
    }
    const parser = new window.DOMParser() as unknown as XmlParser;
    // happy-dom 21 leaves an XML document's Attr.nodeName empty; the DOM says it is the
    // attribute's qualified name (Attr.name), and maxGraph's ObjectCodec reads attributes by it.
    const probe = parser.parseFromString('<a b="1"/>', 'text/xml').documentElement?.attributes[0];
    if (probe && probe.nodeName !== 'b') {
      Object.defineProperty(window.Attr.prototype, 'nodeName', { get(this: { name: string }) { return this.name; }, configurable: true });
    }
    const mx = await import('@maxgraph/core');
    return { mx, parser };
  })();
  return loaded;
}

/** The XML of a compressed diagram: base64, raw deflate, URI-encoded (as draw.io saves it). */
export function inflateDiagram(text: string): string {
  return decodeURIComponent(inflateRawSync(Buffer.from(text.trim(), 'base64')).toString('utf8'));
}

const childElements = (e: XmlElement, name: string) => Array.from(e.childNodes).filter((n) => n.nodeType === 1 && n.nodeName === name);

export async function decodeDrawio(xml: string): Promise<DecodedDiagram> {
  const { mx, parser } = await maxGraph();
  const file = parser.parseFromString(xml, 'text/xml');
  const top = file.documentElement;
  if (!top || top.nodeName === 'parsererror' || file.getElementsByTagName('parsererror').length) throw new Error('drawio: not well-formed XML');
  let modelElement: XmlElement | undefined;
  if (top.nodeName === 'mxGraphModel') modelElement = top;
  else if (top.nodeName === 'mxfile') {
    const diagram = childElements(top, 'diagram')[0];
    if (!diagram) throw new Error('drawio: an mxfile with no <diagram>');
    modelElement = childElements(diagram, 'mxGraphModel')[0];
    if (!modelElement) {
      const inner = parser.parseFromString(inflateDiagram(diagram.textContent ?? ''), 'text/xml');
      if (inner.documentElement?.nodeName !== 'mxGraphModel') throw new Error('drawio: the compressed diagram holds no <mxGraphModel>');
      modelElement = inner.documentElement;
    }
  } else throw new Error(`drawio: <${top.nodeName}> is neither <mxfile> nor <mxGraphModel>`);

  // The real decoder: maxGraph's model codecs, as ModelXmlSerializer.import runs them.
  mx.registerModelCodecs();
  const model = new mx.GraphDataModel();
  new mx.Codec(modelElement.ownerDocument as never).decode(modelElement as never, model);

  // The decoder leaves dangling references unresolved: check the model against the document.
  const root = model.getRoot();
  const cellsXml = modelElement.getElementsByTagName('mxCell');
  if (!root || cellsXml.length === 0) throw new Error('drawio: the model has no cells');
  const seen = new Set<string>();
  const vertices: DecodedVertex[] = [];
  const edges: DecodedEdge[] = [];
  const inTree = (c: InstanceType<MaxGraph['Cell']>) => {
    let cur: InstanceType<MaxGraph['Cell']> | null = c;
    for (let depth = 0; cur && depth < 10_000; depth++) {
      if (cur === root) return true;
      cur = cur.getParent();
    }
    return false;
  };
  const elements = Array.from(cellsXml);
  for (const el of elements) {
    const id = el.getAttribute('id');
    if (!id) throw new Error('drawio: an mxCell without an id');
    if (seen.has(id)) throw new Error(`drawio: two cells have id ${id}`);
    seen.add(id);
  }
  // A reference to no cell of the document first (the decoder then misplaces the cells).
  for (const el of elements) {
    for (const attr of ['parent', 'source', 'target'] as const) {
      const ref = el.getAttribute(attr);
      if (ref !== null && !seen.has(ref)) throw new Error(`drawio: ${attr === 'parent' ? 'cell' : 'edge'} ${el.getAttribute('id')} names a ${attr} ${ref} that does not exist`);
    }
  }
  for (const el of elements) {
    const id = el.getAttribute('id')!;
    const cell = model.getCell(id);
    if (!cell) throw new Error(`drawio: cell ${id} was not decoded into the model`);
    const parentId = el.getAttribute('parent');
    if (parentId !== null && (!model.getCell(parentId) || cell.getParent()?.getId() !== parentId)) throw new Error(`drawio: cell ${id} names a parent ${parentId} that does not exist`);
    if (parentId === null && cell !== root) throw new Error(`drawio: cell ${id} has no parent and is not the root`);
    if (!inTree(cell)) throw new Error(`drawio: cell ${id} is not in the model's tree`);
    for (const end of ['source', 'target'] as const) {
      const ref = el.getAttribute(end);
      if (ref !== null && (!model.getCell(ref) || cell.getTerminal(end === 'source')?.getId() !== ref)) throw new Error(`drawio: edge ${id} names a ${end} ${ref} that does not exist`);
    }
    const value = cell.getValue();
    const text = value === null || value === undefined ? '' : String(value);
    const parent = cell.getParent()?.getId() ?? null;
    if (cell.isEdge()) {
      edges.push({ id, value: text, source: cell.getTerminal(true)?.getId() ?? null, target: cell.getTerminal(false)?.getId() ?? null, parent });
    } else if (cell.isVertex()) {
      const g = cell.getGeometry();
      if (!g) throw new Error(`drawio: vertex ${id} has no geometry`);
      vertices.push({ id, value: text, parent, geometry: { x: g.x, y: g.y, width: g.width, height: g.height }, style: el.getAttribute('style') ?? '' });
    }
  }
  return { vertices, edges };
}
