/* What Swagger UI's own markup lacks for an accessible page (docs/api.md, the docs page), added
   to what it renders: loaded by templates/analyses/swagger_ui.html after Swagger UI's bundle.

   - Its headings skip levels: the API's title is an <h1>, each tag of operations an <h3>, the
     schemas' heading an <h4>, and an opened operation's sections ("Parameters", "Responses")
     <h4> too. Tags and schemas are the page's second level, an operation's sections its third:
     aria-level says so.
   - The API's title and description sit outside any landmark (Swagger UI renders its own
     <main> for the operations only): that block is named a region. Each opened operation's
     responses table is a region too, unnamed: it is named after its operation.
   - An example body is a scrollable <pre> a keyboard cannot reach: it takes the focus.
   - A parameter's list of choices has no label: it is named after its parameter.

   Swagger UI renders in script and again when anything is opened, so the attributes are set
   on every change under #swagger-ui. */
"use strict";

(() => {
  const root = document.getElementById("swagger-ui");
  if (root === null) {
    return;
  }
  const set = (element, name, value) => {
    if (element.getAttribute(name) !== value) {
      element.setAttribute(name, value);
    }
  };
  const mend = () => {
    root.querySelectorAll("h3.opblock-tag, section.models > h4").forEach((heading) => {
      set(heading, "aria-level", "2");
    });
    root.querySelectorAll(".opblock-body h4").forEach((heading) => {
      set(heading, "aria-level", "3");
    });
    const about = root.querySelector(".information-container");
    if (about !== null) {
      set(about, "role", "region");
      set(about, "aria-label", "About the API");
    }
    root.querySelectorAll("table.responses-table[role=region]").forEach((table) => {
      const operation = table.closest(".opblock");
      const method = operation?.querySelector(".opblock-summary-method")?.textContent ?? "";
      const path = operation?.querySelector(".opblock-summary-path")?.dataset.path ?? "";
      set(table, "aria-label", `Responses of ${method} ${path}`.trim());
    });
    root.querySelectorAll(".opblock-body pre").forEach((pre) => set(pre, "tabindex", "0"));
    root.querySelectorAll("tr[data-param-name] select:not([aria-label])").forEach((select) => {
      set(select, "aria-label", select.closest("tr").dataset.paramName);
    });
  };
  new MutationObserver(mend).observe(root, { childList: true, subtree: true });
  mend();
})();
