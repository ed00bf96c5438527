//! The page skeleton: a restrictive Content-Security-Policy (no script may run, nothing may be
//! fetched: styles inline, images only as `data:`), the style sheet (phone widths and print
//! included), the embedded JSON document, and the body.

use super::escape;

/// What every page is made of.
pub struct Page<'a> {
    /// The `<title>` and first heading (escaped here).
    pub title: &'a str,
    /// Which document the JSON block holds (`host-report`, `snapshot-diff`, ...), also the
    /// `<body>`'s class.
    pub kind: &'static str,
    /// The `--format json` document, already written by [`escape::script_json`].
    pub json: String,
    /// The body's markup, every remote string in it already escaped.
    pub body: String,
}

/// The policy: nothing but the inline style sheet and `data:` images; no script, no fetch, no
/// form, no base URL (frame-ancestors cannot be set from a meta tag: browsers ignore it).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const STYLE: &str = r#"
:root{--fg:#1b1f24;--dim:#5b6470;--bad:#b3261e;--warn:#8a5a00;--good:#1d6b34;--line:#d0d7de;--bg:#fff;--band:#eef2f7;--accent:#2f5fb3}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1180px;padding:12px 16px 40px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
h1{font-size:1.45em;margin:.4em 0}
h2{font-size:1.15em;margin:1.3em 0 .4em;padding-bottom:.2em;border-bottom:1px solid var(--line)}
h3{font-size:1em;margin:1em 0 .3em}
p{margin:.25em 0}
.dim{color:var(--dim)}.bad{color:var(--bad);font-weight:600}.warn{color:var(--warn);font-weight:600}.good{color:var(--good)}
dl.fields{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:.4em 0}
dl.fields dt{color:var(--dim)}dl.fields dd{margin:0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.4em 0;font-size:.95em}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
th{background:var(--band)}
td.differs{background:#fff3c4;font-weight:600}
ul.items{margin:.3em 0;padding-left:1.2em}
ul.items li.i1{list-style:circle;margin-left:1.4em}
ul.items li.i2{list-style:square;margin-left:2.8em}
pre{background:var(--band);padding:8px;overflow-x:auto;white-space:pre-wrap;font-size:.9em}
figure{margin:.6em 0}
figcaption{color:var(--dim);font-size:.9em}
svg{width:100%;height:auto;display:block}
svg text{font:11px system-ui,sans-serif;fill:var(--fg)}
svg .axis{stroke:var(--dim);stroke-width:1}
svg .tick{fill:var(--dim)}
svg .run{fill:#9db7e0}
svg .run.running{fill:var(--accent)}
svg .compared{fill:#fde9b6;opacity:.7}
svg .band{fill:#c9d8f0}
svg .mean{stroke:var(--accent);stroke-width:2}
svg .mark{stroke-width:2}
svg .mark-launch{stroke:#2f5fb3;fill:#2f5fb3}
svg .mark-install{stroke:#7a4fb5;fill:#7a4fb5}
svg .mark-driver{stroke:#b35a00;fill:#b35a00}
svg .mark-unit{stroke:#2b8a8a;fill:#2b8a8a}
svg .mark-host{stroke:#6b6b6b;fill:#6b6b6b}
svg .mark-reboot{stroke:#000;fill:#000}
svg .mark-fault{stroke:var(--bad);fill:var(--bad)}
svg .mark-power{stroke:#c27c0e;fill:#c27c0e}
svg .mark-gpu{stroke:#a33a7a;fill:#a33a7a}
svg .mark-bench{stroke:#2f7d32;fill:#2f7d32}
.verdict{border-left:4px solid #b3261e;padding:.2em .8em;margin:1em 0;background:#fdf3f2}
.legend span{display:inline-block;margin-right:12px;font-size:.9em}
.legend-launch{color:#2f5fb3}.legend-install{color:#7a4fb5}.legend-driver{color:#b35a00}.legend-unit{color:#2b8a8a}.legend-host{color:#6b6b6b}.legend-reboot{color:#000}.legend-fault{color:var(--bad)}.legend-power{color:#c27c0e}.legend-gpu{color:#a33a7a}
svg{overflow:visible}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
section.report{margin-bottom:2.5em}
footer{margin-top:3em;color:var(--dim);font-size:.85em}
@media (max-width:600px){body{padding:8px;font-size:13px}dl.fields{grid-template-columns:1fr}dl.fields dd{margin-left:10px}figure{overflow-x:auto}figure svg{min-width:760px}table.launches th,table.launches td{overflow-wrap:normal;min-width:9em}}
@media print{body{max-width:none;padding:0;font-size:11px}.scroll{overflow:visible}h2{break-after:avoid}figure,table{break-inside:avoid}a{color:inherit;text-decoration:none}}
"#;

/// The whole document.
pub fn render(page: &Page<'_>) -> String {
    let title = escape::text(page.title);
    let mut out = String::with_capacity(page.body.len() + page.json.len() + 4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\n"
    ));
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<meta name=\"generator\" content=\"probe {}\">\n",
        env!("CARGO_PKG_VERSION")
    ));
    out.push_str(&format!(
        "<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n"
    ));
    out.push_str(&format!("<body class=\"{}\">\n", page.kind));
    out.push_str(&page.body);
    out.push_str(&format!(
        "<script type=\"application/json\" id=\"probe-data\" data-document=\"{}\">{}</script>\n",
        page.kind, page.json
    ));
    out.push_str(&format!(
        "<footer>Made by probe {}: read-only evidence, no script on this page. The JSON document \
         (the same as <code>--format json</code>) is embedded in the element \
         <code>#probe-data</code>.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    ));
    out
}
