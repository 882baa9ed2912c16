() => {
  // Gradio has drawn the page: its own behaviour starts (assets/page_view.js; assets/branch_ask.js needs no start)
  const go = (tries) => { if (window.LLMPageView) window.LLMPageView.start(); else if (tries > 0) setTimeout(() => go(tries - 1), 50); };
  go(200);
}
