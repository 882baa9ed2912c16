/* The values of Gradio's components, read and written in one place (Gradio's markup may change: only this file knows it).
 *
 *   LLMValues.box(id)          the text, number or select box of the component with element id `id` (or null)
 *   LLMValues.read(id)         its value ('' when it is not there)
 *   LLMValues.write(id, v)     set it as a person's typing would (Gradio's state follows); a slider's range too
 *   LLMValues.checked(id)      a checkbox component's value
 *   LLMValues.step()           the step slider's step (a number, or null before it is drawn)
 *   LLMValues.setStep(n)       move the step slider as a drag would (assets/app_viewer.js draws the step)
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
    const r = range('step-slider');
    if (!r) return false;
    r.value = String(Math.max(0, Math.min(Number(n), Number(r.max))));
    r.dispatchEvent(new Event('input', { bubbles: true }));
    if (!opts || opts.release !== false) r.dispatchEvent(new Event('change', { bubbles: true }));
    return true;
  }

  root.LLMValues = {
    box, write, step, setStep,
    read: (id) => (box(id) ? box(id).value : ''),
    checked: (id) => !!el(id)?.querySelector('input[type=checkbox]')?.checked,
    checkbox: (id) => el(id)?.querySelector('input[type=checkbox]') || null,
  };
})(window);
