//! The `apps` pack (P-APP): `open_app` and `close_app` on Linux, and the
//! action-response flow ([`respond`]: command payload to the client as one `__MCP__` line,
//! `text` to speech).
//!
//! `open_app` takes `app_name` (an XDG desktop entry, matched by `Name` case-insensitively
//! or by desktop file id, that is also on the allow-list) or `app_path` (an executable or a
//! `.desktop` file inside an allowed directory, after resolving symlinks and `..`). The
//! program starts from an argument vector, never through a shell, in its own process group.
//! Started processes are tracked per session (`ToolContext::session_id`, `default` when
//! absent); `close_app` ends the tracked process: SIGTERM, SIGKILL after the grace period,
//! then reaped.
//!
//! Pack options (relative paths resolve against the config's base dir):
//! - `allow`: names or desktop file ids that may be started (default: none);
//! - `desktop_dirs`: where `.desktop` files are searched (default
//!   `$XDG_DATA_HOME/applications`, then `$XDG_DATA_DIRS/*/applications`);
//! - `allowed_dirs`: directories whose programs `app_path` may start (default: none);
//! - `grace_ms`: how long `close_app` waits after SIGTERM before SIGKILL (default 3000).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolcall_core::{Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::{Pack, PackConfig, PackError, SessionEnd};

pub mod desktop;
pub mod process;
pub mod respond;

pub use respond::{ActionResponseOutput, ClientOutput, respond};

use desktop::DesktopEntry;
use process::{Ending, Tracker};

/// Longest `app_name` / `app_path` accepted, in bytes.
pub const MAX_ARG: usize = 4096;

/// What the launcher may start.
#[derive(Debug, Clone)]
pub struct AppsConfig {
    pub allow: Vec<String>,
    pub desktop_dirs: Vec<PathBuf>,
    pub allowed_dirs: Vec<PathBuf>,
    pub grace: Duration,
}

impl Default for AppsConfig {
    fn default() -> Self {
        AppsConfig {
            allow: Vec::new(),
            desktop_dirs: desktop::default_dirs(),
            allowed_dirs: Vec::new(),
            grace: Duration::from_secs(3),
        }
    }
}

/// A program to start, and under which name it is tracked.
struct Target {
    key: String,
    name: String,
    argv: Vec<String>,
    working_dir: Option<PathBuf>,
}

/// The launcher shared by `open_app` and `close_app`.
#[derive(Debug)]
pub struct Launcher {
    config: AppsConfig,
    tracker: Tracker,
}

fn session(ctx: &ToolContext) -> &str {
    ctx.session_id.as_deref().unwrap_or("default")
}

fn arg<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => {
            Err(ToolError::failed(format!("{key} must not be empty")))
        }
        Some(Value::String(s)) if s.len() > MAX_ARG => Err(ToolError::failed(format!(
            "{key} is longer than {MAX_ARG} bytes"
        ))),
        Some(Value::String(s)) => Ok(Some(s.trim())),
        Some(other) => Err(ToolError::failed(format!(
            "{key} must be a string, got {other}"
        ))),
    }
}

impl Launcher {
    pub fn new(config: AppsConfig) -> Self {
        Launcher {
            config,
            tracker: Tracker::default(),
        }
    }

    /// The desktop entry `app_name` means, if it is installed and allowed. Blocks on the
    /// file system (it scans every desktop directory).
    pub fn resolve_name(&self, app_name: &str) -> Result<DesktopEntry, ToolError> {
        self.config.resolve_name(app_name)
    }

    /// `app_path` resolved (symlinks, `..`) and checked to lie inside an allowed
    /// directory. Blocks on the file system.
    pub fn resolve_path(&self, app_path: &str) -> Result<PathBuf, ToolError> {
        self.config.resolve_path(app_path)
    }

    /// Runs a lookup on a blocking thread: desktop-entry scans, symlink resolution and
    /// file reads wait on the disk (or on a FIFO someone named `x.desktop`), and must not
    /// stall the async runtime's threads.
    async fn look_up<T: Send + 'static>(
        &self,
        lookup: impl FnOnce(&AppsConfig) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let config = self.config.clone();
        tokio::task::spawn_blocking(move || lookup(&config))
            .await
            .map_err(|e| ToolError::failed(format!("the app lookup stopped: {e}")))?
    }
}

impl AppsConfig {
    fn allowed(&self, entry: &DesktopEntry) -> bool {
        self.allow
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&entry.id) || a.eq_ignore_ascii_case(&entry.name))
    }

    fn resolve_name(&self, app_name: &str) -> Result<DesktopEntry, ToolError> {
        let entries = desktop::scan(&self.desktop_dirs);
        let wanted = app_name.strip_suffix(".desktop").unwrap_or(app_name);
        let found = entries
            .iter()
            .find(|e| e.id.eq_ignore_ascii_case(wanted))
            .or_else(|| entries.iter().find(|e| e.name.eq_ignore_ascii_case(wanted)));
        let allowed: Vec<&str> = entries
            .iter()
            .filter(|e| self.allowed(e))
            .map(|e| e.name.as_str())
            .collect();
        let list = if allowed.is_empty() {
            "none".to_owned()
        } else {
            allowed.join(", ")
        };
        match found {
            None => Err(ToolError::failed(format!(
                "unknown app \"{app_name}\": no installed application has this name; apps you may open: {list}"
            ))),
            Some(e) if !self.allowed(e) => Err(ToolError::failed(format!(
                "app \"{}\" is not on the allow-list; apps you may open: {list}",
                e.name
            ))),
            Some(e) => Ok(e.clone()),
        }
    }

    fn resolve_path(&self, app_path: &str) -> Result<PathBuf, ToolError> {
        let raw = Path::new(app_path);
        if !raw.is_absolute() {
            return Err(ToolError::failed(format!(
                "app_path \"{app_path}\" must be an absolute path"
            )));
        }
        let real = raw
            .canonicalize()
            .map_err(|e| ToolError::failed(format!("app_path \"{app_path}\": {e}")))?;
        let inside = self.allowed_dirs.iter().any(|d| {
            d.canonicalize()
                .map(|d| real.starts_with(d))
                .unwrap_or(false)
        });
        if !inside {
            return Err(ToolError::failed(format!(
                "app_path \"{app_path}\" is not inside an allowed directory"
            )));
        }
        Ok(real)
    }

    fn target_for_path(&self, app_path: &str) -> Result<Target, ToolError> {
        let real = self.resolve_path(app_path)?;
        let file_name = real
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(stem) = file_name.strip_suffix(".desktop") {
            let entry = desktop::read_entry(&real, stem)
                .map_err(|e| ToolError::failed(e.to_string()))?
                .ok_or_else(|| {
                    ToolError::failed(format!("{app_path} is not a launchable application entry"))
                })?;
            return Ok(Target {
                key: entry.id,
                name: entry.name,
                argv: entry.argv,
                working_dir: entry.working_dir,
            });
        }
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(&real)
            .map_err(|e| ToolError::failed(format!("app_path \"{app_path}\": {e}")))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(ToolError::failed(format!(
                "app_path \"{app_path}\" is not an executable file"
            )));
        }
        Ok(Target {
            key: real.display().to_string(),
            name: file_name,
            argv: vec![real.display().to_string()],
            working_dir: None,
        })
    }

    /// What `open_app`'s arguments name.
    fn target(&self, app_name: Option<&str>, app_path: Option<&str>) -> Result<Target, ToolError> {
        match (app_name, app_path) {
            (Some(name), _) => {
                let e = self.resolve_name(name)?;
                Ok(Target {
                    key: e.id,
                    name: e.name,
                    argv: e.argv,
                    working_dir: e.working_dir,
                })
            }
            (None, Some(path)) => self.target_for_path(path),
            (None, None) => Err(ToolError::failed("give app_name or app_path")),
        }
    }
}

impl Launcher {
    /// Starts an app for a session (or reports the instance already running).
    pub async fn open(&self, session: &str, args: &Value) -> Result<ToolOutput, ToolError> {
        let name = arg(args, "app_name")?.map(str::to_owned);
        let path = arg(args, "app_path")?.map(str::to_owned);
        let target = self
            .look_up(move |c| c.target(name.as_deref(), path.as_deref()))
            .await?;
        if let Some(pid) = self.tracker.running_pid(session, &target.key).await {
            return Ok(json!({
                "app": target.name, "pid": pid, "already_running": true,
                "message": format!("{} is already running (pid {pid}).", target.name)
            })
            .into());
        }
        if self.tracker.count(session).await >= process::MAX_PER_SESSION {
            return Err(ToolError::failed(format!(
                "this session already runs {} apps; close one first",
                process::MAX_PER_SESSION
            )));
        }
        let (pid, child) =
            process::start(&target.argv, target.working_dir.as_deref()).map_err(|e| {
                ToolError::failed(format!(
                    "could not start {} ({}): {e}",
                    target.name,
                    target.argv.first().map(String::as_str).unwrap_or("")
                ))
            })?;
        let name = target.name.clone();
        self.tracker
            .add(session, target.key, target.name, pid, child)
            .await;
        Ok(
            json!({"app": name, "pid": pid, "message": format!("Started {name} (pid {pid}).")})
                .into(),
        )
    }

    /// Ends the session's tracked processes of an app.
    pub async fn close(&self, session: &str, app_name: &str) -> Result<ToolOutput, ToolError> {
        let mut taken = self.tracker.take(session, app_name).await;
        if taken.is_empty() {
            // Also accept a name that resolves to a tracked desktop entry id.
            let name = app_name.to_owned();
            if let Ok(e) = self.look_up(move |c| c.resolve_name(&name)).await {
                taken = self.tracker.take(session, &e.id).await;
            }
        }
        if taken.is_empty() {
            let running = self.tracker.names(session).await;
            let list = if running.is_empty() {
                "none".to_owned()
            } else {
                running.join(", ")
            };
            return Err(ToolError::failed(format!(
                "\"{app_name}\" was not opened in this session, so it cannot be closed; running: {list}"
            )));
        }
        let mut closed = Vec::new();
        let mut sentences = Vec::new();
        for r in taken {
            let (name, pid) = (r.name.clone(), r.pid);
            let ending = process::stop(r, self.config.grace).await.map_err(|e| {
                ToolError::failed(format!("could not close {name} (pid {pid}): {e}"))
            })?;
            let how = match ending {
                Ending::AlreadyExited(_) => "had already exited",
                Ending::Terminated(_) => "closed",
                Ending::Killed(_) => "did not quit in time and was killed",
            };
            sentences.push(format!("{name} (pid {pid}) {how}."));
            closed.push(json!({"app": name, "pid": pid, "ending": how}));
        }
        Ok(json!({"closed": closed, "message": sentences.join(" ")}).into())
    }

    /// Ends everything a session started (e.g. when the session ends).
    pub async fn close_all(&self, session: &str) -> usize {
        self.stop_all(self.tracker.take_all(session).await).await
    }

    /// Ends everything this launcher started, in every session; returns how many.
    pub async fn close_everything(&self) -> usize {
        self.stop_all(self.tracker.take_every_session().await).await
    }

    async fn stop_all(&self, all: Vec<process::Running>) -> usize {
        let n = all.len();
        for r in all {
            let _ = process::stop(r, self.config.grace).await;
        }
        n
    }
}

/// When the run using the pack ends, the apps it opened are closed: they are not the
/// caller's children any more, so nothing else would end them.
#[async_trait]
impl SessionEnd for Launcher {
    async fn end(&self) {
        self.close_everything().await;
    }
}

/// `open_app`.
pub struct OpenApp(pub Arc<Launcher>);
/// `close_app`.
pub struct CloseApp(pub Arc<Launcher>);

#[async_trait]
impl Tool for OpenApp {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "open_app",
            "Open an application the user allows, by name (app_name) or by path (app_path).",
            json!({
                "type": "object",
                "properties": {
                    "app_name": {"type": "string", "minLength": 1},
                    "app_path": {"type": "string", "minLength": 1}
                },
                "anyOf": [{"required": ["app_name"]}, {"required": ["app_path"]}]
            }),
        )
        // Starting a program is an effect on the machine that cannot be taken back.
        .with_annotations(toolcall_core::ToolAnnotations {
            read_only: Some(false),
            destructive: Some(true),
            idempotent: Some(false),
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        self.0.open(session(ctx), &args).await
    }
}

#[async_trait]
impl Tool for CloseApp {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "close_app",
            "Close an application that was opened in this session.",
            json!({
                "type": "object",
                "properties": {"app_name": {"type": "string", "minLength": 1}},
                "required": ["app_name"]
            }),
        )
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let name =
            arg(&args, "app_name")?.ok_or_else(|| ToolError::failed("app_name is required"))?;
        self.0.close(session(ctx), name).await
    }
}

fn string_list(config: &PackConfig, key: &str) -> Result<Option<Vec<String>>, PackError> {
    match config.options.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| PackError::Config {
                pack: "apps".into(),
                message: format!("option \"{key}\" must be a list of strings"),
            }),
        Some(_) => Err(PackError::Config {
            pack: "apps".into(),
            message: format!("option \"{key}\" must be a list of strings"),
        }),
    }
}

/// The launcher as configured by the pack options (see the module doc).
pub fn launcher(config: &PackConfig) -> Result<Launcher, PackError> {
    let mut c = AppsConfig::default();
    if let Some(allow) = string_list(config, "allow")? {
        c.allow = allow;
    }
    if let Some(dirs) = string_list(config, "desktop_dirs")? {
        c.desktop_dirs = dirs.iter().map(|d| config.base_dir.join(d)).collect();
    }
    if let Some(dirs) = string_list(config, "allowed_dirs")? {
        c.allowed_dirs = dirs.iter().map(|d| config.base_dir.join(d)).collect();
    }
    match config.options.get("grace_ms") {
        None => {}
        Some(v) => {
            let ms = v
                .as_u64()
                .filter(|ms| *ms <= 60_000)
                .ok_or_else(|| PackError::Config {
                    pack: "apps".into(),
                    message: "option \"grace_ms\" must be a number of milliseconds up to 60000"
                        .into(),
                })?;
            c.grace = Duration::from_millis(ms);
        }
    }
    Ok(Launcher::new(c))
}

/// Loads the pack.
pub fn pack(config: &PackConfig) -> Result<Pack, PackError> {
    pack_with(Arc::new(launcher(config)?))
}

/// The pack over a given launcher (keep the `Arc` to call [`Launcher::close_all`]).
pub fn pack_with(launcher: Arc<Launcher>) -> Result<Pack, PackError> {
    let mut registry = Registry::new();
    registry.add_tool(Arc::new(OpenApp(launcher.clone())))?;
    registry.add_tool(Arc::new(CloseApp(launcher.clone())))?;
    Ok(Pack {
        name: "apps",
        registry,
        state: None,
        on_end: Some(launcher),
        round_output: Some(Arc::new(respond::ActionResponseOutput)),
    })
}
