/* What Swagger UI's own markup lacks for an accessible page (docs/api.md, the docs page), added
   to what it renders: loaded by templates/analyses/swagger_ui.html after Swagger UI's bundle.

   - Its headings skip a level: the API's title is an <h1>, each tag of operations an <h3> and
     the schemas' heading an <h4>. Both are the second level of the page: aria-level says so.
   - The API's title and description sit outside any landmark (Swagger UI renders its own
     <main> for the operations only): that block is named a region.

   Swagger UI renders in script and again when a tag or the schemas are opened, so the
   attributes are set on every change under #swagger-ui. */
"use strict";

(() => {
  const root = document.getElementById("swagger-ui");
  if (root === null) {
    return;
  }
  const mend = () => {
    root.querySelectorAll("h3.opblock-tag, section.models > h4").forEach((heading) => {
      if (heading.getAttribute("aria-level") !== "2") {
        heading.setAttribute("aria-level", "2");
      }
    });
    const about = root.querySelector(".information-container");
    if (about !== null && about.getAttribute("role") !== "region") {
      about.setAttribute("role", "region");
      about.setAttribute("aria-label", "About the API");
    }
  };
  new MutationObserver(mend).observe(root, { childList: true, subtree: true });
  mend();
})();
