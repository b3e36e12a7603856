--- HTML for the review desk: escaping and the page frame. Every piece of data (mail text,
-- model text, error messages, field names, values) reaches a page only through `esc`, so a
-- mail holding `<script>` is shown as those characters, never run. The desk's own script and
-- style are served from /desk.js and /desk.css (no inline code, no external assets), which
-- lets the Content-Security-Policy forbid everything else.
-- @module jsoncontract.review.html
local core = require "jsoncontract.core"

local tostring, pairs, ipairs = tostring, pairs, ipairs
local gsub, format, byte = string.gsub, string.format, string.byte
local concat, sort = table.concat, table.sort

local _M = { _VERSION = core._VERSION }

local ESC = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }

--- Escape a value for HTML text or a double-quoted attribute.
-- Control characters other than tab and newline become U+FFFD so a mail cannot hide text.
-- @param s any value (nil gives "", others go through tostring)
-- @treturn string
function _M.esc(s)
    if s == nil then return "" end
    s = tostring(s)
    s = gsub(s, "[&<>\"']", ESC)
    s = gsub(s, "[%z\1-\8\11\12\14-\31\127]", "\239\191\189")
    return s
end
local esc = _M.esc

--- Percent-encode a value for a URL query (RFC 3986 unreserved characters stay).
-- @param s any value
-- @treturn string
function _M.urlenc(s)
    return (gsub(tostring(s), "[^%w%-%._~]", function(c) return format("%%%02X", byte(c)) end))
end

--- A query string from a table, keys sorted, nil and "" values left out.
-- @tparam table args
-- @treturn string "" or "?k=v&..."
function _M.query(args)
    local keys = {}
    for k, v in pairs(args) do
        if v ~= nil and v ~= "" then keys[#keys + 1] = k end
    end
    if #keys == 0 then return "" end
    sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = _M.urlenc(k) .. "=" .. _M.urlenc(args[k]) end
    return "?" .. concat(parts, "&")
end

--- The page frame.
-- @tparam table p `title` (string), `body` (string, HTML already escaped by the caller),
--   `reviewer` (string), `job` (table with `contract_name`, `contract_version`, `id`), `page` (a
--   name for the body's class: "queue", "item")
-- @treturn string the whole document
function _M.page(p)
    local job = p.job or {}
    return concat {
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<title>", esc(p.title), " - jsoncontract review</title>",
        "<link rel=\"stylesheet\" href=\"/desk.css\"><script src=\"/desk.js\" defer></script></head>",
        "<body class=\"", esc(p.page or ""), "\"><header><a href=\"/\" class=\"home\">review desk</a> ",
        "<span class=\"job\">job ", esc(job.id), " &middot; contract <b>", esc(job.contract_name), "</b> ",
        esc(job.contract_version), "</span>",
        "<span class=\"who\">reviewer <b>", esc(p.reviewer), "</b></span>",
        "<span class=\"keys\">keys: ", p.keys or "", "</span></header>\n<main>",
        p.body, "</main></body></html>\n",
    }
end

--- The desk's stylesheet: readable on a 1366x768 laptop, two columns (mail and attempts |
-- decision) that fall to one below 1000 px.
_M.CSS = [[
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:#1d2125;background:#f6f7f9}
header{display:flex;gap:1.2em;align-items:baseline;padding:.5em 1em;background:#243447;color:#e8edf2;flex-wrap:wrap}
header a{color:#fff;font-weight:600;text-decoration:none}
header .keys{margin-left:auto;font-size:.85em;opacity:.85}
kbd{border:1px solid #9aa5b1;border-radius:3px;padding:0 .3em;
 font:12px ui-monospace,monospace;background:#fff;color:#111}
main{padding:1em;max-width:1500px;margin:0 auto}
h1{font-size:1.25em;margin:.2em 0 .6em}
h2{font-size:1.05em;margin:1em 0 .4em}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #e1e4e8;vertical-align:top}
table.headers{width:auto;margin-bottom:.4em}
table.headers th{padding-right:1.5em;color:#4a5561;font-weight:600}
tr.sel{outline:2px solid #2f6fdf;outline-offset:-2px}
td.snip{max-width:40em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.counts a,.filters a{margin-right:.8em}
.counts .on,.filters .on{font-weight:700;text-decoration:none;color:#111}
.cols{display:grid;grid-template-columns:minmax(0,1.1fr) minmax(0,1fr);gap:1.2em}
@media (max-width:1000px){.cols{grid-template-columns:1fr}}
pre.text{white-space:pre-wrap;word-break:break-word;background:#fff;border:1px solid #d5d9de;padding:.6em;
 margin:0;font:13.5px/1.45 ui-monospace,"DejaVu Sans Mono",monospace;max-height:22em;overflow:auto}
pre.mail{font:15px/1.5 system-ui,sans-serif}
mark{background:#ffd8d8;border-bottom:2px solid #c62828;color:inherit}
mark.at{background:#c62828;color:#fff}
mark.at:empty::after{content:"\2038"}
.attempt{background:#fff;border:1px solid #d5d9de;padding:.5em .7em;margin:.6em 0}
.attempt .meta{font-size:.85em;color:#4a5561}
.human{border-left:4px solid #2f6fdf}
.gate{font-weight:700}
.gate.accepted{color:#1b7a35}.gate.failed{color:#b3261e}
ul.errs{margin:.3em 0;padding-left:1.2em;color:#b3261e}
code{font:13px ui-monospace,monospace;background:#eef1f4;padding:0 .25em}
form.decide{background:#fff;border:1px solid #d5d9de;padding:.8em}
fieldset{border:1px solid #d5d9de;margin:.4em 0;padding:.4em .7em}
.field{margin:.55em 0}
.field>label.name{display:block;font-weight:600}
.field .hint{display:block;font-size:.82em;color:#4a5561}
.field.bad input,.field.bad select,.field.bad textarea{border-color:#b3261e;background:#fff4f4}
.field .err{color:#b3261e;font-size:.9em;display:block}
input[type=text],select,textarea{font:inherit;padding:.25em .4em;border:1px solid #9aa5b1;border-radius:3px;width:100%}
textarea{min-height:3.2em}
.choices label{margin-right:1em;white-space:nowrap}
.buttons{display:flex;gap:.5em;flex-wrap:wrap;margin-top:.8em}
button{font:inherit;padding:.35em .9em;border:1px solid #6b7785;border-radius:4px;background:#eef1f4;cursor:pointer}
button.primary{background:#1f5fbf;color:#fff;border-color:#1f5fbf}
button:focus,a:focus,input:focus,select:focus,textarea:focus{outline:3px solid #f0b400;outline-offset:1px}
.notice{padding:.5em .8em;margin:.6em 0;border:1px solid #c9d3dd;background:#fff}
.notice.bad{border-color:#b3261e;background:#fff4f4}
.notice.good{border-color:#1b7a35;background:#f1fbf3}
.pager{margin:.8em 0}
.pager a{margin-right:1em}
.muted{color:#5d6773}
]]

--- The desk's script: keyboard shortcuts only. It never reads or writes page data as HTML
-- (no innerHTML); it follows links and presses buttons the server rendered.
_M.JS = [[
(function () {
  "use strict";
  function typing(e) {
    var t = e.target, n = t && t.tagName;
    return n === "INPUT" || n === "TEXTAREA" || n === "SELECT" || (t && t.isContentEditable);
  }
  function go(sel) { var a = document.querySelector(sel); if (a) { a.click(); return true; } return false; }
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("tr[data-href]")); }
  var cur = -1;
  function select(i) {
    var r = rows(); if (!r.length) return;
    if (i < 0) i = 0; if (i >= r.length) i = r.length - 1;
    if (cur >= 0 && r[cur]) r[cur].classList.remove("sel");
    cur = i; r[cur].classList.add("sel"); r[cur].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey && e.key === "Enter") {
      if (go("button[value=accept]")) e.preventDefault();
      return;
    }
    if (e.key === "Escape" && typing(e)) { e.target.blur(); return; }
    if (typing(e) || e.altKey || e.ctrlKey || e.metaKey) return;
    var k = e.key, done = false;
    if (document.body.classList.contains("queue")) {
      if (k === "j") { select(cur + 1); done = true; }
      else if (k === "k") { select(cur - 1); done = true; }
      else if (k === "Enter" || k === "o") {
        var r = rows(), i = cur < 0 ? 0 : cur;
        if (r[i]) { location.href = r[i].getAttribute("data-href"); done = true; }
      }
      else if (k === "n") done = go("a[rel=next]");
      else if (k === "p") done = go("a[rel=prev]");
    } else {
      if (k === "a") done = go("button[value=accept]");
      else if (k === "s" || k === "n") done = go("a[rel=next]");
      else if (k === "x") done = go("button[value=not_applicable]");
      else if (k === "c") done = go("button[value=needs_customer]");
      else if (k === "q" || k === "u") done = go("a[rel=up]");
      else if (k === "e") {
        var f = document.querySelector(".field.bad input, .field.bad select, .field.bad textarea") ||
          document.querySelector("form.decide input[type=text], form.decide select, form.decide textarea");
        if (f) { f.focus(); done = true; }
      }
    }
    if (done) e.preventDefault();
  });
})();
]]

return _M
