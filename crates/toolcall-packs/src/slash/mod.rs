//! The `slash` pack (P-SLASH): slash commands and `@` mentions of a clinical
//! assistant, turned into calls by [`route()`] and carried out over a local data file.
//!
//! | surface | tool | kind | result |
//! |---|---|---|---|
//! | `@Patient Name` | `vista.context.lookup_patient` | immediate | `patient_id`, `visit_id`, `name` |
//! | `/summary` | `vista.command.summary` | job | `subjective`, `objective`, `assessment`, `plan` from the visit notes |
//! | `/order lab [test]` | `vista.command.order_lab` | job | a task record (kept in the pack state) |
//! | `/workflow <name>` | `vista.command.start_workflow::<name>` | job | `workflow_id`, `context_id` |
//!
//! Every call carries a `context_id` (`slash:summary:vis_123`, `mention:patient:pat_456`)
//! in its arguments, and the result echoes it in `metadata`. The specs (names, schemas,
//! `kind`, the `surface` each tool serves) come from a Responses-style tools file; each tool
//! there must be one this module implements, and the workflows are the
//! `start_workflow::<name>` entries it lists.
//!
//! Pack options (paths relative to the config's base dir):
//! - `tools`: the tools file [default: the pack's own, `slash/tools.json`, with the
//!   `triage` and `sepsis-screen` workflows];
//! - `data`: patients and visits [default: none, so lookups find no one],
//!   `{"patients":[{"id","name","visits":[{"id","date","notes":[{"section","text"}]}]}]}`
//!   with `section` one of `subjective`, `objective`, `assessment`, `plan`.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolcall_core::{
    Registry, StateTool, ToolContext, ToolError, ToolOutput, ToolSpec, Transactional,
    tools_file::specs_from_tools_json,
};

use crate::{Pack, PackConfig, PackError, PackState};

pub mod route;

use route::{LOOKUP_PATIENT, ORDER_LAB, START_WORKFLOW, SUMMARY};
pub use route::{PatientRef, SlashContext, SlashError, route};

/// The pack's own tool definitions, used when no `tools` option is given.
const DEFAULT_TOOLS: &str = include_str!("tools.json");

/// Largest data or tools file, in bytes.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Most task and workflow records kept in the state.
pub const MAX_RECORDS: usize = 10_000;
const MAX_TEXT: usize = 4096;

/// The four SOAP sections a summary has.
pub const SECTIONS: [&str; 4] = ["subjective", "objective", "assessment", "plan"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub section: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Visit {
    pub id: String,
    #[serde(default)]
    pub date: String,
    #[serde(default)]
    pub notes: Vec<Note>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Patient {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub visits: Vec<Visit>,
}

/// The local data file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClinicData {
    pub patients: Vec<Patient>,
}

impl ClinicData {
    fn check(&self) -> Result<(), String> {
        let mut ids = std::collections::HashSet::new();
        for p in &self.patients {
            if !ids.insert(p.id.as_str()) {
                return Err(format!("id {:?} is used twice", p.id));
            }
            for v in &p.visits {
                if !ids.insert(v.id.as_str()) {
                    return Err(format!("id {:?} is used twice", v.id));
                }
                if let Some(n) = v
                    .notes
                    .iter()
                    .find(|n| !SECTIONS.contains(&n.section.as_str()))
                {
                    return Err(format!(
                        "visit {:?} has a note in unknown section {:?} (sections: {})",
                        v.id,
                        n.section,
                        SECTIONS.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// The patient with this id, or whose name matches (case-insensitive).
    pub fn find_patient(&self, query: &str) -> Option<&Patient> {
        self.patients.iter().find(|p| p.id == query).or_else(|| {
            self.patients
                .iter()
                .find(|p| p.name.eq_ignore_ascii_case(query.trim()))
        })
    }

    pub fn find_visit(&self, visit_id: &str) -> Option<(&Patient, &Visit)> {
        self.patients
            .iter()
            .find_map(|p| p.visits.iter().find(|v| v.id == visit_id).map(|v| (p, v)))
    }

    /// The router's view: known patients with their latest visit.
    pub fn context(&self, visit_id: Option<&str>, workflows: Vec<String>) -> SlashContext {
        SlashContext {
            visit_id: visit_id.map(str::to_owned),
            patients: self
                .patients
                .iter()
                .map(|p| PatientRef {
                    id: p.id.clone(),
                    name: p.name.clone(),
                    visit_id: latest_visit(p).map(|v| v.id.clone()),
                })
                .collect(),
            workflows,
        }
    }
}

fn latest_visit(p: &Patient) -> Option<&Visit> {
    // ISO dates sort as text; on equal dates the later entry in the file wins.
    p.visits.iter().rev().max_by(|a, b| a.date.cmp(&b.date))
}

/// What the pack records: lab-order tasks and started workflows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SlashState {
    #[serde(default)]
    pub tasks: Vec<Value>,
    #[serde(default)]
    pub workflows: Vec<Value>,
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => {
            Err(ToolError::failed(format!("{key} must not be empty")))
        }
        Some(Value::String(s)) if s.len() > MAX_TEXT => Err(ToolError::failed(format!(
            "{key} is longer than {MAX_TEXT} bytes"
        ))),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolError::failed(format!(
            "{key} must be a string, got {other}"
        ))),
    }
}

fn required<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    str_arg(args, key)?.ok_or_else(|| ToolError::failed(format!("{key} is required")))
}

/// The output with `context_id` echoed in metadata: the call's own, else `default`.
fn with_context(data: Value, args: &Value, ctx: &ToolContext, default: String) -> ToolOutput {
    let context_id = args
        .get("context_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            ctx.metadata
                .get("context_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or(default);
    let mut metadata = Map::new();
    metadata.insert("context_id".into(), json!(context_id));
    if let Some(call_id) = &ctx.call_id {
        metadata.insert("call_id".into(), json!(call_id));
    }
    ToolOutput { data, metadata }
}

/// `vista.context.lookup_patient`.
pub struct LookupPatient {
    spec: ToolSpec,
    data: Arc<ClinicData>,
}

#[async_trait::async_trait]
impl toolcall_core::Tool for LookupPatient {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let query = match (str_arg(&args, "patient_id")?, str_arg(&args, "query")?) {
            (Some(id), _) => id,
            (None, Some(q)) => q,
            (None, None) => return Err(ToolError::failed("give patient_id or query (a name)")),
        };
        let Some(p) = self.data.find_patient(query) else {
            return Err(ToolError::failed(format!("no patient matches {query:?}")));
        };
        let visit = latest_visit(p);
        let data = json!({
            "patient_id": p.id,
            "name": p.name,
            "visit_id": visit.map(|v| v.id.clone()),
            "visit_date": visit.map(|v| v.date.clone()),
        });
        Ok(with_context(
            data,
            &args,
            ctx,
            route::mention_context_id(&p.id),
        ))
    }
}

/// `vista.command.summary`.
pub struct Summary {
    spec: ToolSpec,
    data: Arc<ClinicData>,
}

#[async_trait::async_trait]
impl toolcall_core::Tool for Summary {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let visit_id = required(&args, "visit_id")?;
        let Some((patient, visit)) = self.data.find_visit(visit_id) else {
            return Err(ToolError::failed(format!("visit {visit_id:?} not found")));
        };
        let mut data = json!({"visit_id": visit.id, "patient_id": patient.id, "date": visit.date});
        for section in SECTIONS {
            let texts: Vec<&str> = visit
                .notes
                .iter()
                .filter(|n| n.section == section)
                .map(|n| n.text.trim())
                .collect();
            data[section] = json!(if texts.is_empty() {
                "Not documented.".to_owned()
            } else {
                texts.join(" ")
            });
        }
        Ok(with_context(
            data,
            &args,
            ctx,
            route::command_context_id("summary", Some(visit_id)),
        ))
    }
}

/// The number of the next record in `records` (from 1), or `full` once it holds
/// [`MAX_RECORDS`].
fn next_number(records: &[Value], full: &str) -> Result<usize, ToolError> {
    if records.len() >= MAX_RECORDS {
        return Err(ToolError::failed(full));
    }
    Ok(records.len() + 1)
}

/// `vista.command.order_lab`: records a task in the pack state.
pub struct OrderLab {
    spec: ToolSpec,
    data: Arc<ClinicData>,
}

impl StateTool<SlashState> for OrderLab {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn apply(
        &self,
        s: &mut SlashState,
        ctx: &ToolContext,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        let visit_id = required(&args, "visit_id")?;
        let test = str_arg(&args, "test")?.unwrap_or("basic metabolic panel");
        let Some((patient, _)) = self.data.find_visit(visit_id) else {
            return Err(ToolError::failed(format!("visit {visit_id:?} not found")));
        };
        let task_id = format!(
            "task_{:04}",
            next_number(&s.tasks, "the task list is full")?
        );
        let task = json!({
            "task_id": task_id,
            "kind": "lab_order",
            "test": test,
            "patient_id": patient.id,
            "visit_id": visit_id,
            "status": "open",
            "call_id": ctx.call_id,
        });
        s.tasks.push(task.clone());
        Ok(with_context(
            task,
            &args,
            ctx,
            route::command_context_id("order_lab", Some(visit_id)),
        ))
    }
}

/// `vista.command.start_workflow::<name>`: records a started workflow.
pub struct StartWorkflow {
    spec: ToolSpec,
    workflow: String,
    data: Arc<ClinicData>,
}

impl StateTool<SlashState> for StartWorkflow {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn apply(
        &self,
        s: &mut SlashState,
        ctx: &ToolContext,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        let visit_id = str_arg(&args, "visit_id")?;
        if let Some(v) = visit_id
            && self.data.find_visit(v).is_none()
        {
            return Err(ToolError::failed(format!("visit {v:?} not found")));
        }
        let number = next_number(&s.workflows, "too many workflows started")?;
        let workflow_id = format!("wf_{}_{number:04}", self.workflow);
        let default_ctx =
            route::command_context_id(&format!("workflow:{}", self.workflow), visit_id);
        let out = with_context(Value::Null, &args, ctx, default_ctx);
        let context_id = out
            .metadata
            .get("context_id")
            .cloned()
            .unwrap_or(Value::Null);
        let record = json!({
            "workflow_id": workflow_id,
            "workflow": self.workflow,
            "visit_id": visit_id,
            "context_id": context_id,
            "status": "started",
        });
        s.workflows.push(record.clone());
        Ok(ToolOutput {
            data: record,
            metadata: out.metadata,
        })
    }
}

/// The pack's state handle: the recorded tasks and workflows.
pub struct SlashStateHandle(Arc<Mutex<SlashState>>);

impl SlashStateHandle {
    pub fn state(&self) -> SlashState {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl PackState for SlashStateHandle {
    fn snapshot(&self) -> Value {
        serde_json::to_value(self.state()).unwrap_or(Value::Null)
    }

    fn restore(&self, snapshot: Value) -> Result<(), PackError> {
        let s: SlashState = serde_json::from_value(snapshot).map_err(|e| PackError::Config {
            pack: "slash".into(),
            message: format!("not a slash state: {e}"),
        })?;
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = s;
        Ok(())
    }
}

fn read_json(path: &Path) -> Result<Value, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .len();
    if len > MAX_FILE_BYTES {
        return Err(format!(
            "{} is larger than {MAX_FILE_BYTES} bytes",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

/// Everything a loaded slash pack needs: data, tool specs, workflow names.
pub struct SlashSetup {
    pub data: Arc<ClinicData>,
    pub specs: Vec<ToolSpec>,
}

impl SlashSetup {
    /// Reads the `tools` and `data` options.
    pub fn load(config: &PackConfig) -> Result<SlashSetup, PackError> {
        let cfg = |message: String| PackError::Config {
            pack: "slash".into(),
            message,
        };
        let path = |key: &str| match config.options.get(key) {
            None => Ok(None),
            Some(Value::String(p)) => Ok(Some(config.base_dir.join(p))),
            Some(other) => Err(cfg(format!(
                "option {key:?} must be a file path, got {other}"
            ))),
        };
        let tools = match path("tools")? {
            Some(p) => read_json(&p).map_err(cfg)?,
            None => serde_json::from_str(DEFAULT_TOOLS)
                .map_err(|e| cfg(format!("the built-in tools file: {e}")))?,
        };
        let specs = specs_from_tools_json(&tools)?;
        let data: ClinicData = match path("data")? {
            Some(p) => serde_json::from_value(read_json(&p).map_err(cfg)?)
                .map_err(|e| cfg(format!("data: {e}")))?,
            None => ClinicData::default(),
        };
        data.check().map_err(|e| cfg(format!("data: {e}")))?;
        Ok(SlashSetup {
            data: Arc::new(data),
            specs,
        })
    }

    /// Workflow names the tools file declares.
    pub fn workflows(&self) -> Vec<String> {
        self.specs
            .iter()
            .filter_map(|s| {
                s.name
                    .strip_prefix(START_WORKFLOW)?
                    .strip_prefix("::")
                    .map(str::to_owned)
            })
            .collect()
    }

    /// The router's context for a visit open in the UI (or none).
    pub fn context(&self, visit_id: Option<&str>) -> SlashContext {
        self.data.context(visit_id, self.workflows())
    }
}

/// Loads the pack (options `tools` and `data`, see the module doc).
pub fn pack(config: &PackConfig) -> Result<Pack, PackError> {
    pack_from(SlashSetup::load(config)?)
}

/// The pack over an already loaded setup.
pub fn pack_from(setup: SlashSetup) -> Result<Pack, PackError> {
    let state = Arc::new(Mutex::new(SlashState::default()));
    let mut registry = Registry::new();
    for spec in setup.specs {
        let data = setup.data.clone();
        let name = spec.name.clone();
        let tool: Arc<dyn toolcall_core::Tool> = match name.as_str() {
            LOOKUP_PATIENT => Arc::new(LookupPatient { spec, data }),
            SUMMARY => Arc::new(Summary { spec, data }),
            ORDER_LAB => Arc::new(Transactional::new(state.clone(), OrderLab { spec, data })),
            other => match other
                .strip_prefix(START_WORKFLOW)
                .and_then(|r| r.strip_prefix("::"))
            {
                Some(workflow) => {
                    let ctx = SlashContext::default();
                    route::workflow_tool(workflow, &ctx).map_err(|e| PackError::Config {
                        pack: "slash".into(),
                        message: e.to_string(),
                    })?;
                    Arc::new(Transactional::new(
                        state.clone(),
                        StartWorkflow {
                            spec,
                            workflow: workflow.to_owned(),
                            data,
                        },
                    ))
                }
                None => {
                    return Err(PackError::Config {
                        pack: "slash".into(),
                        message: format!(
                            "the tools file declares {other:?}, which this pack does not implement"
                        ),
                    });
                }
            },
        };
        registry.add_tool(tool)?;
    }
    Ok(Pack {
        name: "slash",
        registry,
        state: Some(Arc::new(SlashStateHandle(state))),
        on_end: None,
        round_output: None,
    })
}
