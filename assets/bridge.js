/* The one channel between the page's scripts and the server (ui/bridge.py), from the page's head.
 *
 *   LLMBridge.send(kind, data)   a message to the server: the custom event `kind` of the hidden #bridge component,
 *                                with `data` and the page's own address (queued until Gradio has drawn the bridge)
 *   LLMBridge.on(kind, fn)       fn(message, text) for each message of `kind` the server sends (kind: a name or a list)
 *   LLMBridge.last(kind)         the last message of `kind` (or null)
 *   LLMBridge.whenDrawn(fn)      fn() once Gradio has drawn the page (the bridge, its last component, is there)
 *
 * A server message is the bridge's value, JSON with a `kind`; the #bridge component's own script calls attach().
 */
(function (root) {
  'use strict';

  const handlers = {}, last = {}, queue = [], drawn = [];
  let fire = null, kinds = [];

  function deliver(text) {
    let m;
    try { m = JSON.parse(text); } catch (err) { return; }
    if (!m || typeof m.kind !== 'string') return;
    last[m.kind] = m;
    (handlers[m.kind] || []).forEach((fn) => { try { fn(m, text); } catch (err) { console.error('bridge:', m.kind, err); } });
  }

  function send(kind, data) {
    const msg = Object.assign({ address: root.location.origin + root.location.pathname }, data || {});
    if (fire && kinds.includes(kind)) fire(kind, msg);
    else if (!fire) queue.push([kind, msg]);
    else console.warn('bridge: the server takes no message', kind);
  }

  function on(kind, fn) {
    (Array.isArray(kind) ? kind : [kind]).forEach((k) => (handlers[k] = handlers[k] || []).push(fn));
  }

  function attach(trigger, props, watch, names) { // (the #bridge component's js_on_load)
    fire = trigger;
    kinds = names || [];
    watch('value', () => deliver(props.value));
    queue.splice(0).forEach(([k, m]) => send(k, m));
    requestAnimationFrame(() => drawn.splice(0).forEach((fn) => fn()));
  }

  function whenDrawn(fn) {
    if (fire) requestAnimationFrame(fn); else drawn.push(fn);
  }

  root.LLMBridge = { send, on, attach, whenDrawn, last: (kind) => last[kind] || null, ready: () => fire !== null };
})(window);
