/* The values of Gradio's components, read and written in one place (Gradio's markup may change: only this file knows it).
 *
 *   LLMValues.box(id)          the text, number or select box of the component with element id `id` (or null)
 *   LLMValues.read(id)         its value ('' when it is not there)
 *   LLMValues.write(id, v)     set it as a person's typing would (Gradio's state follows); a slider's range too
 *   LLMValues.checked(id)      a checkbox component's value
 *   LLMValues.label(id)        the element holding a component's label text
 *   LLMValues.step()           the step slider's step (a number, or null before it is drawn)
 *   LLMValues.number(id)       a slider's or number box's value (NaN when empty or not there)
 *   LLMValues.setStep(n, opts) move the step slider as a drag would (assets/app_viewer.js draws the step); opts.release
 *                              false: no `change` (a drag still held), opts.play: the event marked as Play's own
 *   LLMValues.showStep(n)      the step slider's thumb, track and number at n, Gradio not told (Play's steps)
 */
(function (root) {
  'use strict';

  const BOX = 'textarea, input[type=number], input[type=text], input:not([type])';
  const el = (id) => document.getElementById(id);
  const box = (id) => el(id)?.querySelector(BOX) || null;
  const range = (id) => el(id)?.querySelector('input[type=range]') || null;

  function write(id, v) {
    const b = box(id);
    if (!b) return false;
    const proto = b.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value').set.call(b, String(v));
    b.dispatchEvent(new Event('input', { bubbles: true }));
    const r = range(id);
    if (r) { r.value = String(v); r.dispatchEvent(new Event('input', { bubbles: true })); }
    return true;
  }

  function step() {
    const r = range('step-slider');
    return r ? Number(r.value) : null;
  }

  // (`change` too: a released drag; moved again when the slider shows another step than the page)
  function setStep(n, opts) {
    const r = range('step-slider'), o = opts || {};
    if (!r) return false;
    r.value = String(Math.max(0, Math.min(Number(n), Number(r.max))));
    const ev = new Event('input', { bubbles: true });
    if (o.play) ev.llmPlay = true;
    r.dispatchEvent(ev);
    if (o.release !== false) r.dispatchEvent(new Event('change', { bubbles: true }));
    return true;
  }

  function showStep(n) {
    const root_ = el('step-slider');
    if (!root_) return false;
    root_.querySelectorAll('input').forEach((i) => { i.value = n; });
    const r = range('step-slider'), lo = Number(r?.min), hi = Number(r?.max);
    if (r && hi > lo) r.style.setProperty('--range_progress', `${((n - lo) / (hi - lo)) * 100}%`); // the track's fill, as Gradio draws it
    return true;
  }

  function number(id) {
    const b = el(id)?.querySelector('input[type=number]') || range(id);
    return b && b.value.trim() !== '' ? Number(b.value) : NaN; // (a box emptied to type anew: not 0)
  }

  root.LLMValues = {
    box, write, step, setStep, showStep, number, range,
    read: (id) => (el(id)?.querySelector(BOX) || el(id)?.querySelector('input') || { value: '' }).value,
    checked: (id) => !!el(id)?.querySelector('input[type=checkbox]')?.checked,
    checkbox: (id) => el(id)?.querySelector('input[type=checkbox]') || null,
    label: (id) => el(id)?.querySelector('[data-testid="block-info"]') || null,
  };
})(window);
