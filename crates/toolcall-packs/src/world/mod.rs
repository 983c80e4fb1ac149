//! The `world` pack (P-WORLD): a text-adventure world of players, locations and
//! objects, edited by six tools that check everything and commit only on success (X-5).
//!
//! This module owns the world model ([`World`]), loading and validating a world file, the
//! indented tree printed by `toolcall world show`, and the pack's [`PackState`]. Each tool
//! lives in its own module and declares its effects (the annotations MCP clients see): none
//! is read-only; `create_object` only adds, the others update or delete (destructive), and
//! repeating one of those with the same arguments changes nothing more (idempotent).
//!
//! World file (JSON):
//! ```json
//! {"players":   [{"id":"char_001","name":"Jack","location":"loc_cave","attributes":{}}],
//!  "locations": [{"id":"loc_cave","name":"Cave","links":[{"to":"loc_beach","kind":"out"}],"attributes":{}}],
//!  "objects":   [{"id":"obj_chest","name":"Chest","holder":"loc_cave","attributes":{"condition":"locked"}}]}
//! ```
//! Ids are unique across all three kinds; an object's `holder` is a player, a location or
//! another object; a link of kind `out` leads one way, `bidirectional` both ways.
//!
//! Pack options: `{"world": "world.json"}` (a path, relative to the config's base dir) or
//! `{"world": {...}}` (the world inline). Without `world` the pack starts with an empty world.
//! `"ids": {"timestamp": 1764210832000, "seed": 1}` makes `create_object` ids reproducible
//! (a fixed timestamp and a seeded suffix) so a recorded session can refer to them.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolcall_core::{Registry, ToolError, Transactional};

use crate::{Pack, PackConfig, PackError, PackState};

pub mod create_object;
pub mod delete_attribute;
pub mod delete_object;
pub mod move_object;
pub mod move_player;
pub mod set_attribute;

/// Largest world file accepted, in bytes.
pub const MAX_WORLD_BYTES: u64 = 16 * 1024 * 1024;
/// Most entities (players + locations + objects) a world may hold.
pub const MAX_ENTITIES: usize = 100_000;
/// Longest id, name, attribute name or attribute value accepted from a call.
pub const MAX_TEXT: usize = 4096;
/// Most attributes one entity may carry.
pub const MAX_ATTRIBUTES: usize = 256;

/// Narrative attributes: name → value (usually a sentence).
pub type Attributes = Map<String, Value>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Player {
    pub id: String,
    pub name: String,
    pub location: String,
    #[serde(default)]
    pub attributes: Attributes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    Out,
    Bidirectional,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub to: String,
    pub kind: LinkKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Location {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub links: Vec<Link>,
    #[serde(default)]
    pub attributes: Attributes,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    pub id: String,
    pub name: String,
    /// The player, location or object that holds this object.
    pub holder: String,
    #[serde(default)]
    pub attributes: Attributes,
}

/// The whole world; tools edit a copy and the copy is kept only on success.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct World {
    #[serde(default)]
    pub players: Vec<Player>,
    #[serde(default)]
    pub locations: Vec<Location>,
    #[serde(default)]
    pub objects: Vec<Object>,
}

/// What an id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityKind {
    Player,
    Location,
    Object,
}

impl EntityKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Player => "player",
            EntityKind::Location => "location",
            EntityKind::Object => "object",
        }
    }

    /// Parses `entityType` (`player`, `object` or `location`).
    pub fn parse(s: &str) -> Result<Self, ToolError> {
        match s {
            "player" => Ok(EntityKind::Player),
            "location" => Ok(EntityKind::Location),
            "object" => Ok(EntityKind::Object),
            other => Err(ToolError::failed(format!(
                "entityType must be \"player\", \"object\" or \"location\", not {other:?}"
            ))),
        }
    }
}

/// Why a world file was refused.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("cannot read world file {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("world file {path} is larger than {MAX_WORLD_BYTES} bytes")]
    TooLarge { path: String },
    #[error("world is not valid JSON of the expected shape: {0}")]
    Json(#[from] serde_json::Error),
    #[error("invalid world: {0}")]
    Invalid(String),
}

impl World {
    /// Reads and validates a world file.
    pub fn load(path: &Path) -> Result<World, WorldError> {
        let shown = path.display().to_string();
        let io = |source| WorldError::Io {
            path: shown.clone(),
            source,
        };
        let len = std::fs::metadata(path).map_err(io)?.len();
        if len > MAX_WORLD_BYTES {
            return Err(WorldError::TooLarge { path: shown });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        World::from_json_str(&text)
    }

    pub fn from_json_str(text: &str) -> Result<World, WorldError> {
        let world: World = serde_json::from_str(text)?;
        world.validate()?;
        Ok(world)
    }

    pub fn from_value(value: Value) -> Result<World, WorldError> {
        let world: World = serde_json::from_value(value)?;
        world.validate()?;
        Ok(world)
    }

    /// Checks the invariants every tool relies on: unique ids, existing references, and
    /// object holders that form no cycle.
    pub fn validate(&self) -> Result<(), WorldError> {
        let bad = |m: String| Err(WorldError::Invalid(m));
        let total = self.players.len() + self.locations.len() + self.objects.len();
        if total > MAX_ENTITIES {
            return bad(format!("{total} entities, at most {MAX_ENTITIES} allowed"));
        }
        let mut seen = HashSet::new();
        let ids = self
            .players
            .iter()
            .map(|p| &p.id)
            .chain(self.locations.iter().map(|l| &l.id))
            .chain(self.objects.iter().map(|o| &o.id));
        for id in ids {
            if id.is_empty() {
                return bad("an entity has an empty id".into());
            }
            if !seen.insert(id.as_str()) {
                return bad(format!("id {id:?} is used twice"));
            }
        }
        for p in &self.players {
            if self.location(&p.location).is_none() {
                return bad(format!(
                    "player {:?} is in unknown location {:?}",
                    p.id, p.location
                ));
            }
        }
        for l in &self.locations {
            for link in &l.links {
                if self.location(&link.to).is_none() {
                    return bad(format!(
                        "location {:?} links to unknown location {:?}",
                        l.id, link.to
                    ));
                }
            }
        }
        for o in &self.objects {
            if self.kind_of(&o.holder).is_none() {
                return bad(format!(
                    "object {:?} has unknown holder {:?}",
                    o.id, o.holder
                ));
            }
            if self.holder_chain_reaches(&o.holder, &o.id) {
                return bad(format!("object {:?} is (indirectly) inside itself", o.id));
            }
        }
        Ok(())
    }

    pub fn player(&self, id: &str) -> Option<&Player> {
        self.players.iter().find(|p| p.id == id)
    }

    pub fn location(&self, id: &str) -> Option<&Location> {
        self.locations.iter().find(|l| l.id == id)
    }

    pub fn object(&self, id: &str) -> Option<&Object> {
        self.objects.iter().find(|o| o.id == id)
    }

    /// What kind of entity `id` names, if any.
    pub fn kind_of(&self, id: &str) -> Option<EntityKind> {
        if self.player(id).is_some() {
            Some(EntityKind::Player)
        } else if self.location(id).is_some() {
            Some(EntityKind::Location)
        } else if self.object(id).is_some() {
            Some(EntityKind::Object)
        } else {
            None
        }
    }

    /// The display name of an entity, for result sentences.
    pub fn name_of(&self, id: &str) -> Option<&str> {
        self.player(id)
            .map(|p| p.name.as_str())
            .or_else(|| self.location(id).map(|l| l.name.as_str()))
            .or_else(|| self.object(id).map(|o| o.name.as_str()))
    }

    /// The attributes of an entity of the given kind.
    pub fn attributes_mut(&mut self, kind: EntityKind, id: &str) -> Option<&mut Attributes> {
        match kind {
            EntityKind::Player => self
                .players
                .iter_mut()
                .find(|p| p.id == id)
                .map(|p| &mut p.attributes),
            EntityKind::Location => self
                .locations
                .iter_mut()
                .find(|l| l.id == id)
                .map(|l| &mut l.attributes),
            EntityKind::Object => self
                .objects
                .iter_mut()
                .find(|o| o.id == id)
                .map(|o| &mut o.attributes),
        }
    }

    /// Whether walking up the holders from `start` reaches `target` (`start` included).
    /// Bounded by the number of objects, so a corrupted world cannot loop forever.
    pub fn holder_chain_reaches(&self, start: &str, target: &str) -> bool {
        let mut current = start;
        for _ in 0..=self.objects.len() {
            if current == target {
                return true;
            }
            match self.object(current) {
                Some(o) => current = &o.holder,
                None => return false,
            }
        }
        // Longer than the number of objects: a cycle; treat as reaching.
        true
    }

    /// "player Jack", "location Cave", "object Chest" for result sentences.
    fn describe(&self, id: &str) -> String {
        match (self.kind_of(id), self.name_of(id)) {
            (Some(kind), Some(name)) => format!("{} \"{name}\"", kind.as_str()),
            _ => format!("\"{id}\""),
        }
    }

    /// An indented tree: each location with its links, the players in it and what they
    /// carry, and the objects it holds, nested by holder.
    pub fn render_tree(&self) -> String {
        let mut children: HashMap<&str, Vec<&Object>> = HashMap::new();
        for o in &self.objects {
            children.entry(o.holder.as_str()).or_default().push(o);
        }
        let mut out = String::new();
        for l in &self.locations {
            out.push_str(&format!(
                "location {} ({}){}\n",
                l.name,
                l.id,
                attrs(&l.attributes)
            ));
            for link in &l.links {
                let arrow = match link.kind {
                    LinkKind::Out => "->",
                    LinkKind::Bidirectional => "<->",
                };
                let name = self.name_of(&link.to).unwrap_or("?");
                out.push_str(&format!("  {arrow} {name} ({})\n", link.to));
            }
            for p in self.players.iter().filter(|p| p.location == l.id) {
                out.push_str(&format!(
                    "  player {} ({}){}\n",
                    p.name,
                    p.id,
                    attrs(&p.attributes)
                ));
                self.render_contents(&mut out, &children, &p.id, 2);
            }
            self.render_contents(&mut out, &children, &l.id, 1);
        }
        out
    }

    /// Objects held by `holder`, depth first. Iterative with an explicit stack; the world's
    /// holders are acyclic (checked on load and by every tool), and the depth is capped anyway.
    fn render_contents(
        &self,
        out: &mut String,
        children: &HashMap<&str, Vec<&Object>>,
        holder: &str,
        depth: usize,
    ) {
        const MAX_DEPTH: usize = 64;
        let mut stack: Vec<(&Object, usize)> = Vec::new();
        if let Some(kids) = children.get(holder) {
            stack.extend(kids.iter().rev().map(|o| (*o, depth)));
        }
        while let Some((o, d)) = stack.pop() {
            let indent = "  ".repeat(d.min(MAX_DEPTH));
            out.push_str(&format!(
                "{indent}object {} ({}){}\n",
                o.name,
                o.id,
                attrs(&o.attributes)
            ));
            if d < MAX_DEPTH
                && let Some(kids) = children.get(o.id.as_str())
            {
                stack.extend(kids.iter().rev().map(|k| (*k, d + 1)));
            }
        }
    }
}

fn attrs(a: &Attributes) -> String {
    if a.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = a
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect();
    format!(" [{}]", parts.join("; "))
}

/// A required, non-empty string argument of bounded length.
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    match args.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => {
            if s.len() > MAX_TEXT {
                Err(ToolError::failed(format!(
                    "{key} is longer than {MAX_TEXT} bytes"
                )))
            } else {
                Ok(s)
            }
        }
        Some(Value::String(_)) => Err(ToolError::failed(format!("{key} must not be empty"))),
        Some(other) => Err(ToolError::failed(format!(
            "{key} must be a string, got {other}"
        ))),
        None => Err(ToolError::failed(format!("{key} is required"))),
    }
}

/// The shared, committed world of a loaded pack.
pub struct WorldState {
    world: Arc<Mutex<World>>,
}

impl WorldState {
    pub fn new(world: Arc<Mutex<World>>) -> Self {
        WorldState { world }
    }

    /// A copy of the committed world.
    pub fn world(&self) -> World {
        self.world.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl PackState for WorldState {
    fn snapshot(&self) -> Value {
        serde_json::to_value(self.world()).unwrap_or(Value::Null)
    }

    fn restore(&self, snapshot: Value) -> Result<(), PackError> {
        let world = World::from_value(snapshot).map_err(|e| PackError::Config {
            pack: "world".into(),
            message: e.to_string(),
        })?;
        *self.world.lock().unwrap_or_else(|p| p.into_inner()) = world;
        Ok(())
    }
}

/// A registry with the six world tools over `world`.
pub fn registry(world: Arc<Mutex<World>>) -> Result<Registry, PackError> {
    registry_with_ids(world, create_object::IdSource::Random)
}

/// [`registry`] with a chosen source of new object ids.
pub fn registry_with_ids(
    world: Arc<Mutex<World>>,
    ids: create_object::IdSource,
) -> Result<Registry, PackError> {
    let mut r = Registry::new();
    r.add_tool(Arc::new(Transactional::new(
        world.clone(),
        move_object::MoveObject,
    )))?;
    r.add_tool(Arc::new(Transactional::new(
        world.clone(),
        move_player::MovePlayer,
    )))?;
    r.add_tool(Arc::new(Transactional::new(
        world.clone(),
        set_attribute::SetAttribute,
    )))?;
    r.add_tool(Arc::new(Transactional::new(
        world.clone(),
        delete_attribute::DeleteAttribute,
    )))?;
    r.add_tool(Arc::new(Transactional::new(
        world.clone(),
        create_object::CreateObject::new(ids),
    )))?;
    r.add_tool(Arc::new(Transactional::new(
        world,
        delete_object::DeleteObject,
    )))?;
    Ok(r)
}

/// Loads the pack: options `{"world": path-or-object}`.
pub fn pack(config: &PackConfig) -> Result<Pack, PackError> {
    let cfg = |message: String| PackError::Config {
        pack: "world".into(),
        message,
    };
    let world = match config.options.get("world") {
        None => World::default(),
        Some(Value::String(p)) => {
            World::load(&config.base_dir.join(p)).map_err(|e| cfg(e.to_string()))?
        }
        Some(v @ Value::Object(_)) => {
            World::from_value(v.clone()).map_err(|e| cfg(e.to_string()))?
        }
        Some(other) => {
            return Err(cfg(format!(
                "option \"world\" must be a file path or a world object, got {other}"
            )));
        }
    };
    let ids = match config.options.get("ids") {
        None => create_object::IdSource::Random,
        Some(v) => {
            let n = |k: &str| v.get(k).and_then(Value::as_u64);
            match (n("timestamp"), n("seed")) {
                (Some(timestamp), Some(seed)) => create_object::IdSource::Fixed {
                    timestamp,
                    seed,
                    counter: 0,
                },
                _ => {
                    return Err(cfg(
                        "option \"ids\" must be {\"timestamp\": <ms>, \"seed\": <n>}".into(),
                    ));
                }
            }
        }
    };
    let world = Arc::new(Mutex::new(world));
    Ok(Pack {
        name: "world",
        registry: registry_with_ids(world.clone(), ids)?,
        state: Some(Arc::new(WorldState::new(world))),
        on_end: None,
        round_output: None,
    })
}
