// Small DOM helpers: elements are built, never parsed from strings, so
// nothing a document or a plugin returns can become markup.

const svgNS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h makes an HTML element: h('td', {class: 'num'}, 'text', child…).
export function h(tag, attrs, ...children) { return build(document.createElement(tag), attrs, children); }

// fill replaces el's children with children, leaving out null,
// undefined and false (which replaceChildren would write as text).
export function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter(c => c !== undefined && c !== null && c !== false));
  return el;
}

// s makes an SVG element.
export function s(tag, attrs, ...children) { return build(document.createElementNS(svgNS, tag), attrs, children); }

// table makes a table from column headers and rows of cells.
export function table(headers, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, headers.map(c => typeof c === 'string' ? h('th', {}, c) : c))),
    h('tbody', {}, rows));
}

export function ms(v) {
  if (v === undefined || v === null || Number.isNaN(v)) return '–';
  if (v >= 1000) return (v / 1000).toFixed(2) + ' s';
  if (v >= 10) return v.toFixed(1) + ' ms';
  return v.toFixed(2) + ' ms';
}

export function num(v) {
  if (v === undefined || v === null || Number.isNaN(v)) return '–';
  return Number(v).toLocaleString('en');
}

export function bytes(v) {
  if (!v) return '0 B';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return v.toFixed(i ? 1 : 0) + ' ' + u[i];
}

export function ago(t) {
  if (!t) return '–';
  const secs = (Date.now() - new Date(t).getTime()) / 1000;
  if (secs < 60) return Math.max(0, Math.round(secs)) + ' s ago';
  if (secs < 3600) return Math.round(secs / 60) + ' min ago';
  if (secs < 86400) return (secs / 3600).toFixed(1) + ' h ago';
  return (secs / 86400).toFixed(1) + ' days ago';
}

export const short = (digest) => (digest || '').replace(/^sha256:/, '').slice(0, 12);

export function errorBox(err) {
  return h('p', { class: 'error' }, err && err.message ? err.message : String(err));
}

export function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export function stat(value, label) {
  return h('div', { class: 'stat' }, h('b', {}, value), h('span', {}, label));
}
