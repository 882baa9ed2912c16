/* The step viewer's text: numbers and bytes read and written as the Python side writes them.
 *
 * Plotly's typed-array JSON (viz/ ships large arrays as {dtype, bdata}) decoded to typed arrays, and
 * numbers formatted as Python's f-strings format them, so a title the browser writes reads the same as
 * the one viz/ wrote for the same step. Loaded after assets/text.js and viewer_plot.js.
 */
(function (root) {
  'use strict';

  // Plotly's typed-array JSON form {dtype, bdata} -> a typed array (little-endian, as written).
  const TYPES = { f4: Float32Array, f8: Float64Array, i4: Int32Array, u1: Uint8Array, i1: Int8Array, i2: Int16Array, u2: Uint16Array };
  function decode(spec) {
    if (!spec || spec.bdata === undefined) return spec;
    const bin = atob(spec.bdata);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new TYPES[spec.dtype](bytes.buffer);
  }

  // Numbers written as Python writes them (assets/text.js, viz.text: the one formatter of each kind): fixed(y, f) as
  // f'{y:.{f}f}', pct(v, f) as f'{v:.{f}%}', tokens(k) as viz.fmt.tokens.
  const { fixed, pct } = root.LLMText;
  const tokens = (k) => root.LLMText.count(k, 'token');

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { decode, fixed, pct, tokens });
})(typeof window !== 'undefined' ? window : globalThis);
