/* The step viewer's text: numbers and bytes read and written as the Python side writes them.
 *
 * Plotly's typed-array JSON (viz/ ships large arrays as {dtype, bdata}) decoded to typed arrays, and
 * numbers formatted as Python's f-strings format them, so a title the browser writes reads the same as
 * the one viz/ wrote for the same step. Loaded first of the viewer's scripts (after viewer_plot.js).
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

  // Numbers written as Python writes them: f'{y:.{f}f}' rounds exact ties to even (toFixed rounds them up).
  function fixed(y, f) {
    const t = y * Math.pow(2, f + 1); // y is an exact tie at f digits iff y * 2^(f+1) is an odd integer
    if (Number.isInteger(t) && Math.abs(t) < 2 ** 52 && Math.abs(t % 2) === 1) {
      const k = Math.floor(y * Math.pow(10, f));
      return ((k % 2 === 0 ? k : k + 1) / Math.pow(10, f)).toFixed(f);
    }
    return y.toFixed(f);
  }
  const pct = (v, f) => fixed(v * 100, f) + '%'; // Python's '%' format multiplies by 100 first, then rounds
  const thousands = (n) => Math.round(n).toLocaleString('en-US');
  const tokens = (k) => thousands(k) + ' token' + (k === 1 ? '' : 's');

  root.LLMViewer = Object.assign(root.LLMViewer || {}, { decode, fixed, pct, tokens });
})(typeof window !== 'undefined' ? window : globalThis);
