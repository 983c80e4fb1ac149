//! `toolcall mcp serve` and `toolcall run --mcp`, against the official MCP Python SDK as the
//! peer: its client drives our server over stdio and Streamable HTTP, and a small server
//! written with it backs tools in a turn against a loopback stand-in model.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use common::{bin, fixture_path, ok, repo_root, scripted_server};

fn python() -> Option<PathBuf> {
    toolcall_testkit::require("python", toolcall_testkit::python())
}

fn toolcall_path() -> String {
    env!("CARGO_BIN_EXE_toolcall").to_owned()
}

fn world_file() -> String {
    repo_root()
        .join("examples/world/world.json")
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// Runs the SDK client script with `plan`; returns its JSON report.
fn run_plan(py: &Path, plan: Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).unwrap();
    let out = Command::new(py)
        .arg(fixture_path("mcp/client_plan.py"))
        .arg(&plan_file)
        .output()
        .unwrap();
    serde_json::from_str(&ok(out)).unwrap()
}

fn tool<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {report}"))
}

fn world_calls() -> Value {
    json!([
        {"name": "set_attribute", "arguments": {"entityType": "object", "entityId": "obj_chest",
                                                 "attributeName": "condition", "value": "open"}},
        {"name": "set_attribute", "arguments": {"entityType": "object"}},
        {"name": "no_such_tool", "arguments": {}}
    ])
}

fn check_world_results(report: &Value) {
    let schema = &tool(report, "set_attribute")["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["entityId"].is_object(), "{schema}");
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(results[0]["structuredContent"]["status"], "ok");
    // The text content is the same result JSON.
    let text: Value =
        serde_json::from_str(results[0]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, results[0]["structuredContent"]);
    // Failures are results with isError and toolcall's error code, not protocol errors.
    for (r, code) in [
        (&results[1], "invalid_arguments"),
        (&results[2], "unknown_tool"),
    ] {
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["structuredContent"]["error"]["code"], code, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with(&format!("{code}: ")), "{text}");
    }
}

// covers W-MCP
#[test]
fn sdk_client_over_stdio_lists_and_calls_world_tools() {
    let Some(py) = python() else { return };
    let report = run_plan(
        &py,
        json!({
            "transport": "stdio",
            "command": [toolcall_path(), "mcp", "serve", "--pack", "world",
                        "--pack-opt", format!("world.world={}", world_file())],
            "calls": world_calls(),
        }),
    );
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"move_player") && names.contains(&"create_object"),
        "{names:?}"
    );
    check_world_results(&report);
}

// covers W-MCP
#[test]
fn disabled_tools_are_not_listed() {
    let Some(py) = python() else { return };
    let report = run_plan(
        &py,
        json!({
            "transport": "stdio",
            "command": [toolcall_path(), "mcp", "serve", "--pack", "world",
                        "--disable", "delete_*"],
        }),
    );
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"set_attribute"));
    assert!(!names.iter().any(|n| n.starts_with("delete_")), "{names:?}");
}

/// A `toolcall mcp serve --http` child, stopped on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_http(key: &str) -> HttpServer {
    let mut child = bin()
        .args(["mcp", "serve", "--pack", "world", "--pack-opt"])
        .arg(format!("world.world={}", world_file()))
        .args(["--http", "127.0.0.1:0", "--api-key-env", "MCP_TEST_KEYS"])
        .env("MCP_TEST_KEYS", format!("other-key, {key}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("the server exited early").unwrap();
        if let Some(rest) = line.split("serving MCP at ").nth(1) {
            break rest.trim().to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    HttpServer { child, url }
}

/// The status line of a raw POST to `url` with `headers`.
fn post_status(url: &str, headers: &str) -> String {
    let hostport = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut s = std::net::TcpStream::connect(hostport).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {hostport}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{headers}content-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.lines().next().unwrap_or_default().to_owned()
}

// covers W-MCP
#[test]
fn sdk_client_over_http_with_a_client_key() {
    let Some(py) = python() else { return };
    let server = start_http("key-123");
    assert!(server.url.ends_with("/mcp"), "{}", server.url);
    assert!(post_status(&server.url, "").contains(" 401 "));
    assert!(post_status(&server.url, "authorization: Bearer key-12\r\n").contains(" 401 "));
    let report = run_plan(
        &py,
        json!({"transport": "http", "url": server.url, "api_key": "key-123",
               "calls": world_calls()}),
    );
    check_world_results(&report);
}

// covers W-MCP, P-CU
#[test]
fn computer_screenshot_is_image_content() {
    let Some(py) = python() else { return };
    let Some(xvfb) = toolcall_testkit::require(
        "xvfb",
        toolcall_packs::computer::xvfb::Xvfb::start(640, 480),
    ) else {
        return;
    };
    let report = run_plan(
        &py,
        json!({
            "transport": "stdio",
            "command": [toolcall_path(), "mcp", "serve", "--pack", "computer",
                        "--display", xvfb.display()],
            "calls": [{"name": "computer_use", "arguments": {"action": "screenshot"}}],
        }),
    );
    let listed = tool(&report, "computer_use");
    assert_eq!(listed["annotations"]["destructiveHint"], true, "{listed}");
    assert_eq!(listed["annotations"]["readOnlyHint"], false, "{listed}");
    let result = &report["results"][0];
    assert_eq!(result["isError"], false, "{result}");
    let images: Vec<&Value> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "image")
        .collect();
    assert_eq!(images.len(), 1, "{result}");
    assert_eq!(images[0]["mimeType"], "image/png");
    let png = base64::engine::general_purpose::STANDARD
        .decode(images[0]["data"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    // The image is not repeated inside the JSON.
    assert!(
        result["structuredContent"].to_string().len() < 4096,
        "{result}"
    );
}

// covers W-MCP, R-8, X-2
#[test]
fn run_uses_a_python_mcp_server_that_dies_mid_call() {
    let Some(py) = python() else { return };
    let chat = |calls: Value| {
        json!({"choices":[{"index":0,"finish_reason":"tool_calls",
               "message":{"role":"assistant","content":null,"tool_calls":calls}}]})
    };
    let call = |id: &str, name: &str, args: Value| {
        json!({"id": id, "type": "function",
               "function": {"name": name, "arguments": args.to_string()}})
    };
    let (url, seen) = scripted_server(vec![
        chat(json!([
            call("m1", "calc_add", json!({"a": 2, "b": 3})),
            call("m2", "calc_refuse", json!({}))
        ])),
        chat(json!([call("m3", "calc_stall", json!({}))])),
        chat(json!([call("m4", "calc_add", json!({"a": 1, "b": 1}))])),
        json!({"choices":[{"index":0,"finish_reason":"stop",
               "message":{"role":"assistant","content":"All done."}}]}),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("calc.pid");
    let server_cmd = format!(
        "calc={} {}",
        py.display(),
        fixture_path("mcp/calc_server.py").display()
    );
    let child = bin()
        .args(["run", "--mcp", &server_cmd, "--model", &url])
        .args(["--model-name", "m", "--mode", "native", "--max-rounds", "5"])
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .arg("Add and wait.")
        .env("CALC_PID_FILE", &pid_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the MCP server while `stall` is in flight.
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid = loop {
        if let Ok(pid) = std::fs::read_to_string(&pid_file)
            && !pid.trim().is_empty()
        {
            break pid.trim().to_owned();
        }
        assert!(Instant::now() < deadline, "the stall call never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    let killed = Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let text = ok(out);
    assert!(text.contains("All done."), "{text}");

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4);
    let offered: Vec<&str> = seen[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "calc_add",
            "calc_big",
            "calc_pid",
            "calc_refuse",
            "calc_stall"
        ]
    );
    // Every result goes back under its call id.
    let results: Vec<(String, Value)> = seen[3].1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                serde_json::from_str(m["content"].as_str().unwrap()).unwrap(),
            )
        })
        .collect();
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["m1", "m2", "m3", "m4"]);
    assert_eq!(results[0].1["data"]["result"], 5, "{:?}", results[0]);
    assert_eq!(results[1].1["error"]["code"], "tool_failed");
    assert!(
        results[1].1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused on purpose")
    );
    // The server died mid-call: that call failed, and the next call started it again.
    assert_eq!(
        results[2].1["error"]["code"], "tool_failed",
        "{:?}",
        results[2]
    );
    assert_eq!(results[3].1["data"]["result"], 2, "{:?}", results[3]);
}

// covers W-MCP
#[test]
fn mcp_entries_in_a_tools_file_bring_in_the_servers_tools() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([{"type": "mcp", "server_label": "calc",
                "command": [py, fixture_path("mcp/calc_server.py")],
                "env": {"CALC_PID_FILE": dir.path().join("pid")}}])
        .to_string(),
    )
    .unwrap();
    // Served again over MCP: a proxy of the Python server, with toolcall's checks in front.
    let report = run_plan(
        &py,
        json!({
            "transport": "stdio",
            "command": [toolcall_path(), "mcp", "serve", "--tools", tools],
            "calls": [{"name": "calc.add", "arguments": {"a": 20, "b": 22}},
                      {"name": "calc.add", "arguments": {"a": "x"}}],
        }),
    );
    assert_eq!(
        tool(&report, "calc.add")["inputSchema"]["required"],
        json!(["a", "b"])
    );
    let results = report["results"].as_array().unwrap();
    assert_eq!(
        results[0]["structuredContent"]["data"]["result"], 42,
        "{}",
        results[0]
    );
    assert_eq!(
        results[1]["structuredContent"]["error"]["code"], "invalid_arguments",
        "{}",
        results[1]
    );
}

// covers W-MCP
#[test]
fn an_http_mcp_server_backs_tools_through_a_tools_file() {
    let Some(py) = python() else { return };
    let upstream = start_http("key-456");
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([{"type": "mcp", "server_label": "up", "server_url": upstream.url,
                "headers": {"Authorization": "Bearer key-456"}}])
        .to_string(),
    )
    .unwrap();
    // toolcall (stdio) -> toolcall (Streamable HTTP, keyed) -> the world pack.
    let report = run_plan(
        &py,
        json!({
            "transport": "stdio",
            "command": [toolcall_path(), "mcp", "serve", "--tools", tools,
                        "--disable", "up.delete_*"],
            "calls": [{"name": "up.set_attribute",
                       "arguments": {"entityType": "object", "entityId": "obj_chest",
                                     "attributeName": "condition", "value": "open"}},
                      {"name": "up.set_attribute",
                       "arguments": {"entityType": "object", "entityId": "nothing",
                                     "attributeName": "condition", "value": "open"}}],
        }),
    );
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"up.move_player"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("up.delete_")),
        "{names:?}"
    );
    let results = report["results"].as_array().unwrap();
    // The upstream's result is this server's data.
    assert_eq!(
        results[0]["structuredContent"]["data"]["status"], "ok",
        "{}",
        results[0]
    );
    // The upstream's isError result is tool_failed here.
    assert_eq!(
        results[1]["structuredContent"]["error"]["code"], "tool_failed",
        "{}",
        results[1]
    );
}

fn names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// Serves the world pack following a switches file that starts with `create_object` off,
/// then switches it back on and `move_player` off; returns the client's report.
fn switch_while_serving(py: &Path, mode: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let switches = dir.path().join("switches.json");
    // The inspector's file format; present at start, so it applies from the first listing.
    std::fs::write(&switches, r#"{"tools": {"create_object": false}}"#).unwrap();
    run_plan(
        py,
        json!({
            "transport": "stdio",
            "mode": mode,
            "command": [toolcall_path(), "mcp", "serve", "--pack", "world",
                        "--pack-opt", format!("world.world={}", world_file()),
                        "--tool-switches", switches],
            "switch": {"file": switches,
                       "content": {"tools": {"create_object": true, "move_player": false}}},
        }),
    )
}

fn check_switched(report: &Value, notification: &str) {
    let before = names(&report["tools"]);
    assert!(!before.contains(&"create_object"), "{before:?}");
    assert!(before.contains(&"move_player"), "{before:?}");
    let notes = report["notifications"].as_array().unwrap();
    assert!(notes.contains(&json!(notification)), "{notes:?}");
    let after = names(&report["tools_after"]);
    assert!(after.contains(&"create_object"), "{after:?}");
    assert!(!after.contains(&"move_player"), "{after:?}");
    assert_eq!(after.len(), before.len(), "{before:?} -> {after:?}");
}

// covers W-MCP
#[test]
fn switching_a_tool_while_serving_notifies_a_subscribed_client() {
    let Some(py) = python() else { return };
    let report = switch_while_serving(&py, "auto");
    check_switched(&report, "subscription:ToolsListChanged");
}

// covers W-MCP
#[test]
fn switching_a_tool_while_serving_notifies_a_handshake_client() {
    let Some(py) = python() else { return };
    let report = switch_while_serving(&py, "legacy");
    check_switched(&report, "notifications/tools/list_changed");
}

// covers W-MCP, X-4
#[test]
fn a_job_tool_reports_progress_until_its_result() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    // A job that ends only once the client has seen a progress update (no timing guess).
    let job = "import json, os, sys, time\n\
               args = json.load(sys.stdin)\n\
               while not os.path.exists(os.environ['GATE']):\n    time.sleep(0.02)\n\
               print(json.dumps({'built': args['target']}))\n";
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([{"name": "build", "description": "Builds a target (a long job).",
                "parameters": {"type": "object", "properties": {"target": {"type": "string"}},
                               "required": ["target"]},
                "kind": "job",
                "backend": {"type": "program", "argv": [py, "-c", job],
                            "env": {"GATE": gate}}}])
        .to_string(),
    )
    .unwrap();
    let report = run_plan(
        &py,
        json!({
            "transport": "stdio",
            "command": [toolcall_path(), "mcp", "serve", "--tools", tools],
            "calls": [{"name": "build", "arguments": {"target": "docs"},
                       "progress": true, "gate": gate}],
        }),
    );
    let result = &report["results"][0];
    assert_eq!(result["isError"], false, "{result}");
    // The call answers with the job's result, not its "running" acknowledgement.
    assert_eq!(
        result["structuredContent"]["data"],
        json!({"built": "docs"}),
        "{result}"
    );
    let progress = result["progress"].as_array().unwrap();
    assert!(!progress.is_empty(), "{result}");
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    assert!(
        progress[0]["message"].as_str().unwrap().contains("build"),
        "{progress:?}"
    );
}

/// A `toolcall serve` child (its address read from the first stdout line), stopped on drop.
fn start_gateway(args: &[String]) -> HttpServer {
    let mut child = bin()
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{first:?}"))
        .to_owned();
    HttpServer { child, url }
}

// covers W-MCP, W-GW
#[test]
fn serve_runs_an_mcp_servers_tools_server_side_for_an_openai_client() {
    let Some(py) = python() else { return };
    let add = json!({"choices":[{"index":0,"finish_reason":"tool_calls",
        "message":{"role":"assistant","content":null,"tool_calls":[
            {"id":"m1","type":"function",
             "function":{"name":"calc_add","arguments":"{\"a\": 20, \"b\": 22}"}}]}}]});
    let reply = "20 + 22 = 42.";
    let done = json!({"choices":[{"index":0,"finish_reason":"stop",
        "message":{"role":"assistant","content":reply}}]});
    // Two turns (whole, then streamed), each a call round and a reply.
    let (upstream, seen) = scripted_server(vec![add.clone(), done.clone(), add, done]);
    let dir = tempfile::tempdir().unwrap();
    // The server comes from the config file's [[mcp]] table.
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "upstream = {upstream:?}\nretries = 0\n\n[[mcp]]\ntransport = \"stdio\"\n\
             name = \"calc\"\nargv = [{:?}, {:?}]\nenv = {{ CALC_PID_FILE = {:?} }}\n",
            py.display().to_string(),
            fixture_path("mcp/calc_server.py").display().to_string(),
            dir.path().join("pid").display().to_string(),
        ),
    )
    .unwrap();
    let path = |p: &str| dir.path().join(p).display().to_string();
    let gateway = start_gateway(&[
        "--config".into(),
        config.display().to_string(),
        "--archive".into(),
        path("sessions.sqlite"),
        "--tool-switches".into(),
        path("switches.json"),
    ]);
    let out = Command::new(&py)
        .arg(fixture_path("mcp/openai_turn.py"))
        .args([&gateway.url, reply])
        .output()
        .unwrap();
    assert!(ok(out).contains("ok server-side MCP turn"));

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4);
    // The model was offered the MCP server's tools under provider-safe names.
    let offered: Vec<&str> = seen[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"calc_add"), "{offered:?}");
    // The gateway ran the call and answered the model under its id.
    let tool_msg = seen[1].1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{}", seen[1].1))
        .clone();
    assert_eq!(tool_msg["tool_call_id"], "m1");
    let result: Value = serde_json::from_str(tool_msg["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["data"]["result"], 42, "{result}");
}

// covers W-MCP, O-1
#[test]
fn tools_list_shows_mcp_tools_with_their_provider_names() {
    let Some(py) = python() else { return };
    let server = format!(
        "calc={} {}",
        py.display(),
        fixture_path("mcp/calc_server.py").display()
    );
    let table = ok(bin()
        .args(["tools", "list", "--mcp", &server, "--disable", "calc.stall"])
        .output()
        .unwrap());
    let row = |name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} is not listed:\n{table}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert!(table.lines().next().unwrap().starts_with("NAME"), "{table}");
    assert_eq!(
        row("calc.add")[1..5],
        ["yes", "immediate", "mcp:calc", "calc_add"]
    );
    assert_eq!(row("calc.add")[5..].join(" "), "Add two integers.");
    assert_eq!(row("calc.stall")[1], "no");

    let specs: Value = serde_json::from_str(&ok(bin()
        .args(["tools", "list", "--json", "--mcp", &server])
        .output()
        .unwrap()))
    .unwrap();
    let add = specs
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "calc.add")
        .unwrap();
    assert_eq!(add["mcp_server"], "calc");
    assert_eq!(add["provider_name"], "calc_add");
    assert_eq!(add["parameters"]["required"], json!(["a", "b"]));
}

// covers W-MCP, O-1, V-1
#[test]
fn tools_render_and_check_take_mcp_servers() {
    let Some(py) = python() else { return };
    let server = format!(
        "calc={} {}",
        py.display(),
        fixture_path("mcp/calc_server.py").display()
    );
    let out = bin()
        .args(["tools", "render", "--provider", "openai", "--mcp", &server])
        .args(["--disable", "calc.stall"])
        .output()
        .unwrap();
    let note = String::from_utf8_lossy(&out.stderr).into_owned();
    let tools: Value = serde_json::from_str(&ok(out)).unwrap();
    let add = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "calc_add")
        .unwrap_or_else(|| panic!("calc_add is not rendered: {tools}"));
    assert_eq!(add["function"]["description"], "Add two integers.");
    assert_eq!(add["function"]["parameters"]["required"], json!(["a", "b"]));
    assert!(
        !tools.to_string().contains("calc_stall"),
        "a disabled tool was rendered: {tools}"
    );
    assert!(
        note.contains(r#""calc.add" is sent as "calc_add""#),
        "{note}"
    );

    // Checked by id, the schema coerces; with --run the server answers.
    let checked: Value = serde_json::from_str(&ok(bin()
        .args(["tools", "check", "calc.add", r#"{"a": "2", "b": 3}"#])
        .args(["--run", "--mcp", &server])
        .stdin(Stdio::null())
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(checked["status"], "valid", "{checked}");
    assert_eq!(checked["arguments"], json!({"a": 2, "b": 3}));
    assert_eq!(checked["repairs"][0]["kind"], "coerced_integer");
    assert_eq!(checked["result"]["data"]["result"], 5, "{checked}");

    let out = bin()
        .args([
            "tools",
            "check",
            "calc.add",
            r#"{"a": "two"}"#,
            "--mcp",
            &server,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let rejected: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rejected["error"]["code"], "invalid_arguments", "{rejected}");
}

/// `toolcall mcp serve --pack world` on stdio: writes `lines` (in a thread, so a long one
/// cannot block the reading) and returns every line the server wrote up to its answer to
/// the request with id `last`.
fn serve_raw_lines(lines: Vec<Vec<u8>>, last: i64) -> Vec<Value> {
    let mut child = bin()
        .args(["mcp", "serve", "--pack", "world"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for line in lines {
            stdin.write_all(&line).unwrap();
            stdin.write_all(b"\n").unwrap();
        }
        stdin
    });
    let mut replies = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let done = reply["id"] == last;
        replies.push(reply);
        if done {
            break;
        }
    }
    drop(writer.join().unwrap());
    child.wait().unwrap();
    replies
}

// covers W-MCP
#[test]
fn every_malformed_stdio_line_gets_its_json_rpc_error() {
    let request = |id: i64, method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            .to_string()
            .into_bytes()
    };
    let mut huge = br#"{"jsonrpc":"2.0","id":99,"method":"ping","params":{"pad":""#.to_vec();
    huge.resize(60 * 1024 * 1024, b'x');
    huge.extend_from_slice(br#""}}"#);
    let replies = serve_raw_lines(
        vec![
            request(
                1,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}),
            ),
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
            b"garbage".to_vec(),
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/li"#.to_vec(),
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"\xff\xfe\"}".to_vec(),
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
            huge,
            request(4, "tools/call", json!({"arguments": {}})),
            request(
                5,
                "tools/call",
                json!({"name": "move_player", "arguments": 5}),
            ),
            request(6, "tools/list", json!({})),
        ],
        6,
    );
    let by_id = |id: i64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("request {id} was not answered: {replies:?}"))
    };
    let parse_errors: Vec<&Value> = replies.iter().filter(|r| r["id"].is_null()).collect();
    assert_eq!(parse_errors.len(), 5, "{replies:?}");
    for e in parse_errors {
        assert_eq!(e["error"]["code"], -32700, "{e}");
    }
    for id in [4, 5] {
        assert_eq!(by_id(id)["error"]["code"], -32602, "{}", by_id(id));
    }
    assert!(by_id(6)["result"]["tools"].is_array(), "{}", by_id(6));
}

// covers W-MCP
#[test]
fn sdk_client_gets_invalid_params_for_a_bad_tools_call_under_its_id() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let requests = json!([
        {"id": 11, "method": "tools/call", "params": {"arguments": {}}},
        {"id": "twelve", "method": "tools/call", "params": {"name": "move_player", "arguments": [1]}},
        {"id": 13, "method": "tools/call"},
        {"id": 14, "method": "tools/list", "params": {}}
    ]);
    std::fs::write(
        &plan,
        json!({"command": [toolcall_path(), "mcp", "serve", "--pack", "world"],
            "requests": requests})
        .to_string(),
    )
    .unwrap();
    let out = Command::new(&py)
        .arg(fixture_path("mcp/raw_requests.py"))
        .arg(&plan)
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&ok(out)).unwrap();
    let answers = report["answers"].as_array().unwrap();
    for (answer, id) in answers.iter().zip([json!(11), json!("twelve"), json!(13)]) {
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    assert!(answers[3]["result"]["tools"].is_array(), "{}", answers[3]);
}

// covers W-MCP
#[test]
fn world_tools_carry_their_annotations_and_a_coerced_argument_is_reported() {
    let Some(py) = python() else { return };
    let report = run_plan(
        &py,
        json!({
            "transport": "stdio",
            "command": [toolcall_path(), "mcp", "serve", "--pack", "world",
                        "--pack-opt", format!("world.world={}", world_file())],
            "calls": [
                {"name": "delete_object", "arguments": {"objectId": 5}},
                {"name": "set_attribute", "arguments": {"entityType": "object",
                    "entityId": "obj_chest", "attributeName": "condition", "value": "open"}}
            ],
        }),
    );
    let hints = |name: &str| tool(&report, name)["annotations"].clone();
    assert_eq!(hints("delete_object")["destructiveHint"], true, "{report}");
    assert_eq!(hints("delete_object")["readOnlyHint"], false);
    assert_eq!(hints("create_object")["destructiveHint"], false);
    assert_eq!(hints("create_object")["idempotentHint"], false);
    assert_eq!(hints("move_player")["idempotentHint"], true);
    // `objectId: 5` ran as "5": the client is told, in the result it reads.
    let coerced = &report["results"][0];
    let repairs = &coerced["structuredContent"]["repairs"];
    assert_eq!(repairs[0]["kind"], "coerced_string", "{coerced}");
    let text = coerced["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("coerced_string"), "{text}");
    // A call that needed no repair has none listed.
    let plain = &report["results"][1];
    assert_eq!(plain["structuredContent"]["status"], "ok", "{plain}");
    assert!(
        plain["structuredContent"].get("repairs").is_none(),
        "{plain}"
    );
}

/// A raw HTTP request to `url`'s host; the status line and the headers, lowercased.
fn http_raw(url: &str, method: &str, headers: &str, body: &str) -> (String, String) {
    let hostport = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut s = std::net::TcpStream::connect(hostport).unwrap();
    write!(
        s,
        "{method} /mcp HTTP/1.1\r\nHost: {hostport}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{headers}content-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    let head = reply.split("\r\n\r\n").next().unwrap_or_default();
    let status = head.lines().next().unwrap_or_default().to_owned();
    (status, head.to_ascii_lowercase())
}

// covers W-MCP
#[test]
fn ending_an_http_session_is_answered_200() {
    let server = start_http("key-9");
    let auth = "authorization: Bearer key-9\r\n";
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, head) = http_raw(&server.url, "POST", auth, &init.to_string());
    assert!(status.contains(" 200 "), "{status}");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id:"))
        .unwrap_or_else(|| panic!("no session id: {head}"))
        .trim()
        .to_owned();
    let (status, _) = http_raw(
        &server.url,
        "DELETE",
        &format!("{auth}mcp-session-id: {session}\r\n"),
        "",
    );
    assert!(status.contains(" 200 "), "{status}");
    // The session is gone: a request in it is refused.
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let (status, _) = http_raw(
        &server.url,
        "POST",
        &format!("{auth}mcp-session-id: {session}\r\n"),
        &ping.to_string(),
    );
    assert!(status.contains(" 404 "), "{status}");
}
