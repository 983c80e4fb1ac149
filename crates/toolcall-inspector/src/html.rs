//! The pages, rendered on the server as plain HTML: readable without JavaScript. The live
//! page's script only swaps in call blocks that this module renders, so a call looks the
//! same whether it was on the page at load or arrived over the event stream.

use std::fmt::Write as _;

use serde_json::Value;
use toolcall_core::ToolSpec;
use toolcall_run::archive::{CallRecord, SessionRecord, SessionSummary};

use crate::hub::LiveCall;

/// Nesting shown in a JSON tree before it is cut.
const MAX_TREE_DEPTH: usize = 32;
/// Nodes shown in one JSON tree before it is cut.
const MAX_TREE_NODES: usize = 5000;
/// Messages and calls shown on a session page.
const MAX_SESSION_ITEMS: usize = 1000;

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` for a path segment of a link.
fn url_seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

const STYLE: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1d232a;color:#fff;padding:.6em 1em;display:flex;gap:1.5em;align-items:center}
header a{color:#cfe3ff;text-decoration:none}header a.on{color:#fff;font-weight:600}
main{padding:1em;max-width:80em}
h1{font-size:1.2em;margin:.2em 0 .8em}h2{font-size:1.05em;margin:1.2em 0 .4em}h3{font-size:.95em;margin:.8em 0 .3em}
table{border-collapse:collapse;background:#fff;width:100%}
td,th{border-bottom:1px solid #e3e6ea;padding:.35em .6em;text-align:left;vertical-align:top}
pre{background:#fff;border:1px solid #e3e6ea;padding:.5em;overflow:auto;max-height:24em;margin:.3em 0;white-space:pre-wrap;word-break:break-word}
code{font-family:ui-monospace,monospace}
.call{background:#fff;border:1px solid #e3e6ea;border-left:4px solid #8a94a0;margin:.5em 0;padding:.5em .8em}
.call.ok{border-left-color:#2e9e5b}.call.failed{border-left-color:#d0453b}.call.cancelled{border-left-color:#b38600}
.call.running,.call.validated,.call.parsed{border-left-color:#2f6fd0}
.status{display:inline-block;padding:0 .5em;border-radius:1em;background:#e3e6ea;font-size:.85em}
.ok .status{background:#d6f3e1}.failed .status{background:#fadad7}.cancelled .status{background:#fbefc8}
.running .status,.validated .status,.parsed .status{background:#dbe7fb}
.meta{color:#5b6570;font-size:.9em}
mark{background:#ffe08a}
.tool{background:#fff;border:1px solid #e3e6ea;margin:.5em 0;padding:.5em .8em}
.tool.off{opacity:.6}
button{font:inherit;padding:.2em .9em;cursor:pointer}
ul.tree{list-style:none;padding-left:1.2em;margin:0}
#turn{color:#5b6570;margin:.3em 0 .8em}
";

/// A whole page around `body`; `nav` names the current section.
pub fn page(title: &str, nav: &str, body: &str, script: bool) -> String {
    let link = |href: &str, name: &str, label: &str| {
        let on = if name == nav { " class=\"on\"" } else { "" };
        format!("<a href=\"{href}\"{on}>{label}</a>")
    };
    let script = if script {
        format!(
            "<script src=\"{}/inspector.js\" defer></script>",
            crate::BASE
        )
    } else {
        String::new()
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{title} · toolcall inspector</title><style>{STYLE}</style>{script}</head>\
         <body><header><strong>toolcall inspector</strong>{}{}{}</header><main>{body}</main>\
         </body></html>",
        link(crate::BASE, "live", "Live calls"),
        link(&format!("{}/sessions", crate::BASE), "sessions", "Sessions"),
        link(&format!("{}/tools", crate::BASE), "tools", "Tools"),
        title = esc(title),
    )
}

/// The key a live call block is found by: session and call id.
pub fn call_key(call: &LiveCall) -> String {
    format!(
        "{}/{}",
        call.session_id.as_deref().unwrap_or(""),
        call.call_id
    )
}

fn json_pre(v: &Value) -> String {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    format!("<pre><code>{}</code></pre>", esc(&text))
}

/// One live call.
pub fn live_call(call: &LiveCall) -> String {
    let status = call.status.as_str();
    let mut out = format!(
        "<article class=\"call {status}\" data-key=\"{}\" data-call-id=\"{}\" data-status=\"{status}\">\
         <div><code class=\"call-id\">{}</code> <strong class=\"tool-name\">{}</strong> \
         <span class=\"status\">{status}</span> <span class=\"meta\">{}{} · round {}{}{}</span>{}</div>",
        esc(&call_key(call)),
        esc(&call.call_id),
        esc(&call.call_id),
        esc(&call.tool),
        esc(&call.surface),
        if call.job { " · job" } else { "" },
        call.round,
        call.duration_ms
            .map(|d| format!(" · {d} ms"))
            .unwrap_or_default(),
        call.session_id
            .as_deref()
            .map(|s| format!(
                " · <a href=\"{}/sessions/{}\">{}</a>",
                crate::BASE,
                url_seg(s),
                esc(s)
            ))
            .unwrap_or_default(),
        call.replica
            .as_deref()
            .map(|r| format!(
                " <span class=\"replica\" title=\"{}\">from another replica</span>",
                esc(r)
            ))
            .unwrap_or_default(),
    );
    let _ = write!(
        out,
        "<details open><summary>arguments</summary>{}</details>",
        json_pre(&call.arguments)
    );
    if let Some(result) = &call.result {
        let _ = write!(
            out,
            "<details open class=\"result\"><summary>result</summary>{}</details>",
            json_pre(result)
        );
    }
    if !call.repairs.is_empty() {
        out.push_str("<details open><summary>repairs</summary><ul>");
        for r in &call.repairs {
            let _ = write!(
                out,
                "<li><code>{}</code> {}</li>",
                esc(&r.kind),
                esc(&r.message)
            );
        }
        out.push_str("</ul></details>");
    }
    if !call.diagnostics.is_empty() {
        out.push_str("<details><summary>diagnostics of the reply</summary><ul>");
        for d in &call.diagnostics {
            let _ = write!(
                out,
                "<li>{:?} [{}, {}]: {}</li>",
                d.level,
                d.span.start,
                d.span.end,
                esc(&d.message)
            );
        }
        out.push_str("</ul></details>");
    }
    if let Some(ex) = &call.excerpt {
        let _ = write!(
            out,
            "<details><summary>in the reply, bytes {}–{}</summary><pre>{}<mark>{}</mark>{}</pre></details>",
            ex.span[0],
            ex.span[1],
            esc(&ex.before),
            esc(&ex.call),
            esc(&ex.after)
        );
    }
    out.push_str("</article>");
    out
}

/// The live page: every recent call, newest first; the script keeps it current.
pub fn live_page(calls: &[LiveCall]) -> String {
    let mut body = format!(
        "<h1>Live calls</h1><p id=\"turn\" class=\"meta\">Calls appear here as agents run them.</p>\
         <noscript><p class=\"meta\">Without JavaScript this page shows the calls as they were \
         when it loaded; reload it to see newer ones.</p></noscript><section id=\"calls\" data-events=\"{}/events\">",
        crate::BASE
    );
    for c in calls.iter().rev() {
        body.push_str(&live_call(c));
    }
    body.push_str("</section>");
    page("Live calls", "live", &body, true)
}

/// The archive's sessions, newest first.
pub fn sessions_page(sessions: &[SessionSummary], archived: bool) -> String {
    let mut body = String::from("<h1>Sessions</h1>");
    if !archived {
        body.push_str("<p>No session archive is configured.</p>");
        return page("Sessions", "sessions", &body, false);
    }
    if sessions.is_empty() {
        body.push_str("<p>No sessions yet.</p>");
        return page("Sessions", "sessions", &body, false);
    }
    body.push_str(
        "<table><thead><tr><th>session</th><th>started</th><th>description</th>\
         <th>messages</th><th>calls</th></tr></thead><tbody>",
    );
    for s in sessions {
        let _ = write!(
            body,
            "<tr><td><a href=\"{}/sessions/{}\"><code>{}</code></a></td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            crate::BASE,
            url_seg(&s.id),
            esc(&s.id),
            esc(&s.created_at),
            esc(&s.description),
            s.messages,
            s.calls
        );
    }
    body.push_str("</tbody></table>");
    page("Sessions", "sessions", &body, false)
}

/// One session: pack states (the world as a tree), calls by round, the conversation.
pub fn session_page(rec: &SessionRecord) -> String {
    let s = &rec.session;
    let mut body = format!(
        "<h1>Session <code>{}</code></h1><p class=\"meta\">started {} · {} messages · {} calls{}</p>",
        esc(&s.id),
        esc(&s.created_at),
        s.messages,
        s.calls,
        if s.description.is_empty() {
            String::new()
        } else {
            format!(" · {}", esc(&s.description))
        }
    );
    if !rec.pack_states.is_empty() {
        body.push_str("<h2>Pack state</h2>");
        for (pack, state) in &rec.pack_states {
            let _ = write!(body, "<section class=\"pack\" data-pack=\"{}\">", esc(pack));
            let _ = write!(body, "<h3>{}</h3>", esc(pack));
            if pack == "world"
                && let Ok(world) = toolcall_packs::world::World::from_value(state.clone())
            {
                let _ = write!(
                    body,
                    "<pre class=\"world-tree\">{}</pre>",
                    esc(&world.render_tree())
                );
            }
            body.push_str("<details><summary>as data</summary>");
            body.push_str(&json_tree(state));
            body.push_str("</details></section>");
        }
    }
    body.push_str("<h2>Calls</h2>");
    if rec.calls.is_empty() {
        body.push_str("<p>No calls.</p>");
    }
    let mut round = None;
    for c in rec.calls.iter().take(MAX_SESSION_ITEMS) {
        if round != Some(c.round) {
            round = Some(c.round);
            let _ = write!(body, "<h3>Round {}</h3>", c.round);
        }
        body.push_str(&archived_call(c));
    }
    body.push_str("<h2>Conversation</h2><table><tbody>");
    for m in rec.messages.iter().take(MAX_SESSION_ITEMS) {
        let v = serde_json::to_value(m).unwrap_or(Value::Null);
        let role = v.get("role").and_then(Value::as_str).unwrap_or("?");
        let text = match (v.get("content"), v.get("text")) {
            (Some(Value::String(t)), _) | (_, Some(Value::String(t))) => t.clone(),
            (Some(other), _) => serde_json::to_string_pretty(other).unwrap_or_default(),
            _ => String::new(),
        };
        let calls = v
            .get("calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .filter_map(|c| c.get("name").and_then(Value::as_str))
                    .map(esc)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .filter(|s| !s.is_empty())
            .map(|s| format!("<div class=\"meta\">calls: {s}</div>"))
            .unwrap_or_default();
        let text = if text.is_empty() {
            String::new()
        } else {
            format!("<pre>{}</pre>", esc(&text))
        };
        let _ = write!(
            body,
            "<tr><th>{}</th><td>{text}{calls}</td></tr>",
            esc(role)
        );
    }
    body.push_str("</tbody></table>");
    page(&format!("Session {}", s.id), "sessions", &body, false)
}

fn archived_call(c: &CallRecord) -> String {
    let status = match c.results.last() {
        None => "unanswered",
        Some(r) if r.outcome.get("error").is_some() => "failed",
        Some(_) => "ok",
    };
    let mut out = format!(
        "<article class=\"call {status}\" data-call-id=\"{}\"><div><code>{}</code> \
         <strong>{}</strong> <span class=\"status\">{status}</span> <span class=\"meta\">{}</span></div>",
        esc(&c.call_id),
        esc(&c.call_id),
        esc(&c.name),
        esc(&c.format)
    );
    let _ = write!(
        out,
        "<details open><summary>arguments</summary>{}</details>",
        json_pre(&c.arguments)
    );
    if c.repairs.as_array().is_some_and(|a| !a.is_empty()) {
        let _ = write!(
            out,
            "<details><summary>repairs</summary>{}</details>",
            json_pre(&c.repairs)
        );
    }
    for r in &c.results {
        let _ = write!(
            out,
            "<details open><summary>result ({}, {} ms)</summary>{}</details>",
            esc(&r.delivery),
            r.duration_ms,
            json_pre(&r.outcome)
        );
    }
    out.push_str("</article>");
    out
}

/// A JSON value as nested lists, bounded in depth and size. Iterative: an explicit stack
/// instead of recursion.
pub fn json_tree(value: &Value) -> String {
    enum Step<'a> {
        Open(Option<&'a str>, &'a Value, usize),
        Close,
    }
    let mut out = String::from("<ul class=\"tree\">");
    let mut stack = vec![Step::Open(None, value, 0)];
    let mut nodes = 0usize;
    while let Some(step) = stack.pop() {
        let (key, v, depth) = match step {
            Step::Close => {
                out.push_str("</ul></li>");
                continue;
            }
            Step::Open(k, v, d) => (k, v, d),
        };
        nodes += 1;
        if nodes > MAX_TREE_NODES {
            out.push_str("<li class=\"meta\">… (cut)</li>");
            // Close what is open and stop.
            for s in stack.iter().rev() {
                if matches!(s, Step::Close) {
                    out.push_str("</ul></li>");
                }
            }
            break;
        }
        let label = key
            .map(|k| format!("<strong>{}</strong>: ", esc(k)))
            .unwrap_or_default();
        match v {
            Value::Object(m) if depth < MAX_TREE_DEPTH && !m.is_empty() => {
                let _ = write!(out, "<li>{label}<ul class=\"tree\">");
                stack.push(Step::Close);
                for (k, child) in m.iter().rev() {
                    stack.push(Step::Open(Some(k), child, depth + 1));
                }
            }
            Value::Array(a) if depth < MAX_TREE_DEPTH && !a.is_empty() => {
                let _ = write!(out, "<li>{label}<ul class=\"tree\">");
                stack.push(Step::Close);
                for child in a.iter().rev() {
                    stack.push(Step::Open(None, child, depth + 1));
                }
            }
            Value::Object(_) | Value::Array(_) if depth >= MAX_TREE_DEPTH => {
                let _ = write!(
                    out,
                    "<li>{label}<span class=\"meta\">… (too deep)</span></li>"
                );
            }
            other => {
                let _ = write!(
                    out,
                    "<li>{label}<code>{}</code></li>",
                    esc(&other.to_string())
                );
            }
        }
    }
    out.push_str("</ul>");
    out
}

/// One tool: description, schema, state and its switch.
pub fn tool(spec: &ToolSpec, enabled: bool, overridden: bool) -> String {
    let (state, class, action, label) = if enabled {
        ("enabled", "tool on", "false", "Disable")
    } else {
        ("disabled", "tool off", "true", "Enable")
    };
    format!(
        "<section class=\"{class}\" data-tool=\"{name}\" data-enabled=\"{enabled}\">\
         <div><strong>{name}</strong> <span class=\"status\">{state}</span>{set}\
         <form method=\"post\" action=\"{base}/tools/{seg}\" style=\"display:inline;margin-left:1em\">\
         <input type=\"hidden\" name=\"enabled\" value=\"{action}\">\
         <button type=\"submit\" data-toggle=\"{name}\">{label}</button></form></div>\
         <p>{desc}</p><details><summary>arguments schema</summary>{schema}</details></section>",
        name = esc(&spec.name),
        seg = url_seg(&spec.name),
        base = crate::BASE,
        set = if overridden {
            " <span class=\"meta\">(switched here)</span>"
        } else {
            ""
        },
        desc = esc(&spec.description),
        schema = json_pre(&spec.parameters),
    )
}

/// Every registered tool with its switch.
pub fn tools_page(tools: &[(ToolSpec, bool, bool)]) -> String {
    let mut body = String::from(
        "<h1>Tools</h1><p class=\"meta\">A disabled tool is not offered to the model, and a \
         call to it is answered <code>tool_disabled</code>. Choices are kept across restarts.</p>",
    );
    if tools.is_empty() {
        body.push_str("<p>No tools are registered on this server.</p>");
    }
    for (spec, enabled, overridden) in tools {
        body.push_str(&tool(spec, *enabled, *overridden));
    }
    page("Tools", "tools", &body, false)
}

/// A short page for a request that could not be served.
pub fn error_page(title: &str, message: &str) -> String {
    page(
        title,
        "",
        &format!("<h1>{}</h1><p>{}</p>", esc(title), esc(message)),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_escaped_everywhere_it_is_shown() {
        assert_eq!(
            esc("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
        let spec = ToolSpec::new(
            "t",
            "<img src=x onerror=alert(1)>",
            json!({"type": "object"}),
        );
        let html = tool(&spec, true, false);
        assert!(!html.contains("<img"));
        assert!(html.contains("&lt;img"));
        assert_eq!(url_seg("a b/c::d"), "a%20b%2Fc%3A%3Ad");
    }

    #[test]
    fn json_trees_are_bounded_in_depth_and_balanced() {
        let mut v = json!(1);
        for _ in 0..100 {
            v = json!({ "k": v });
        }
        let html = json_tree(&v);
        assert!(html.contains("too deep"));
        assert_eq!(html.matches("<ul").count(), html.matches("</ul>").count());
        let wide = Value::Array((0..MAX_TREE_NODES * 2).map(|i| json!(i)).collect());
        let html = json_tree(&wide);
        assert!(html.contains("(cut)"));
        assert_eq!(html.matches("<ul").count(), html.matches("</ul>").count());
    }
}
