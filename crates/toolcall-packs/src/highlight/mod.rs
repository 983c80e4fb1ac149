//! The `highlight` pack (P-HL): `highlight_object` finds the labelled box a person
//! asked about in a scene and, given the picture, draws it into a PNG.
//!
//! A scene is what an object detector reported for one picture: a JSON array of boxes
//! `[{"box_2d": [y0, x0, y1, x1], "label": "cup"}]`, coordinates normalised to 0–1000 (the
//! usual detector format), or `{"boxes": [...]}`.
//!
//! Pack options (paths relative to the config's base dir):
//! - `scene`: the scene file, or the scene array inline [default: an empty scene, so every
//!   call answers that nothing is in view];
//! - `image` (optional): the picture the scene describes; the result then carries pixel
//!   coordinates, and with the `image` feature a PNG with the box drawn is written;
//! - `output` (optional): where that PNG goes (default `highlighted.png` beside `image`);
//! - `synonyms` (optional): `{"cup": ["mug", "coffee cup"], "laptop": "notebook"}`.
//!
//! Matching lives in [`matching`], drawing in `draw`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolcall_core::{Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::{Pack, PackConfig, PackError};

#[cfg(feature = "image")]
pub mod draw;
pub mod matching;

use matching::{Strength, Synonyms, best_match};

/// Most boxes a scene may hold.
pub const MAX_BOXES: usize = 10_000;
/// Largest scene file, in bytes.
pub const MAX_SCENE_BYTES: u64 = 8 * 1024 * 1024;

/// One detected object: `box_2d` is `[y0, x0, y1, x1]` in 0–1000.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneBox {
    pub box_2d: [u16; 4],
    pub label: String,
}

impl SceneBox {
    pub fn area(&self) -> u64 {
        let [y0, x0, y1, x1] = self.box_2d;
        u64::from(y1.saturating_sub(y0)) * u64::from(x1.saturating_sub(x0))
    }

    fn check(&self) -> Result<(), String> {
        let [y0, x0, y1, x1] = self.box_2d;
        if self.box_2d.iter().any(|&v| v > 1000) {
            return Err(format!(
                "box {:?} of {:?} is outside 0..=1000",
                self.box_2d, self.label
            ));
        }
        if y0 > y1 || x0 > x1 {
            return Err(format!(
                "box {:?} of {:?} is not [y0, x0, y1, x1] with y0 <= y1 and x0 <= x1",
                self.box_2d, self.label
            ));
        }
        Ok(())
    }

    /// The box in pixels of a `width` × `height` picture (inclusive corners).
    pub fn to_pixels(&self, width: u32, height: u32) -> PixelBox {
        let [y0, x0, y1, x1] = self.box_2d.map(u64::from);
        let (w, h) = (u64::from(width.max(1)), u64::from(height.max(1)));
        let lo = |v: u64, size: u64| ((v * size) / 1000).min(size - 1) as u32;
        let hi =
            |v: u64, size: u64| ((v * size).div_ceil(1000)).saturating_sub(1).min(size - 1) as u32;
        let (px0, py0) = (lo(x0, w), lo(y0, h));
        PixelBox {
            x0: px0,
            y0: py0,
            x1: hi(x1, w).max(px0),
            y1: hi(y1, h).max(py0),
        }
    }
}

/// A box in pixels, corners inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PixelBox {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

/// Parses a scene: an array of boxes or `{"boxes": [...]}`.
pub fn parse_scene(value: Value) -> Result<Vec<SceneBox>, String> {
    let list = match value {
        Value::Array(_) => value,
        Value::Object(mut m) => m.remove("boxes").ok_or("scene object has no \"boxes\"")?,
        other => return Err(format!("a scene is an array of boxes, got {other}")),
    };
    let boxes: Vec<SceneBox> = serde_json::from_value(list).map_err(|e| e.to_string())?;
    if boxes.len() > MAX_BOXES {
        return Err(format!("{} boxes, at most {MAX_BOXES}", boxes.len()));
    }
    for b in &boxes {
        b.check()?;
    }
    Ok(boxes)
}

/// `highlight_object` over one scene.
pub struct HighlightObject {
    boxes: Vec<SceneBox>,
    synonyms: Synonyms,
    image: Option<PathBuf>,
    output: Option<PathBuf>,
}

impl HighlightObject {
    pub fn new(boxes: Vec<SceneBox>, synonyms: Synonyms) -> Self {
        HighlightObject {
            boxes,
            synonyms,
            image: None,
            output: None,
        }
    }

    /// The picture the scene describes and where the highlighted copy goes.
    pub fn with_image(mut self, image: PathBuf, output: PathBuf) -> Self {
        self.image = Some(image);
        self.output = Some(output);
        self
    }

    fn in_view(&self) -> Vec<String> {
        let mut labels: Vec<String> = Vec::new();
        for b in &self.boxes {
            if !labels.contains(&b.label) {
                labels.push(b.label.clone());
            }
        }
        labels
    }
}

#[async_trait]
impl Tool for HighlightObject {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "highlight_object",
            "Highlight an object visible in the picture, by name (e.g. \"cup\", \"headphones\").",
            json!({
                "type": "object",
                "properties": {"object": {"type": "string", "description": "the object's name"}},
                "required": ["object"]
            }),
        )
    }

    async fn call(&self, _: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let object = match args.get("object") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim(),
            Some(Value::String(_)) => return Err(ToolError::failed("object must not be empty")),
            Some(other) => {
                return Err(ToolError::failed(format!(
                    "object must be a string, got {other}"
                )));
            }
            None => return Err(ToolError::failed("object is required")),
        };
        let in_view = self.in_view();
        let Some((index, strength)) = best_match(object, &self.boxes, &self.synonyms) else {
            let message = if in_view.is_empty() {
                format!("No {object:?} in view: nothing was detected in the picture.")
            } else {
                format!("No {object:?} in view. In view: {}.", in_view.join(", "))
            };
            return Err(ToolError::failed(message).with_details(json!({"in_view": in_view})));
        };
        let Some(chosen) = self.boxes.get(index) else {
            return Err(ToolError::failed("internal: matched box vanished"));
        };
        let how = match strength {
            Strength::Exact => "exact",
            Strength::Synonym => "synonym",
            Strength::HeadWord => "head_word",
        };
        let mut data = json!({
            "label": chosen.label,
            "box_2d": chosen.box_2d,
            "match": how,
        });
        let mut message = format!(
            "Highlighted the {} at box_2d {:?}",
            chosen.label, chosen.box_2d
        );
        if let (Some(image), Some(output)) = (&self.image, &self.output) {
            let px = render(image.clone(), output.clone(), chosen.clone()).await?;
            data["pixel_box"] = json!([px.x0, px.y0, px.x1, px.y1]);
            message.push_str(&format!(
                " (pixels x {}–{}, y {}–{})",
                px.x0, px.x1, px.y0, px.y1
            ));
            #[cfg(feature = "image")]
            {
                data["image"] = json!(output.display().to_string());
                message.push_str(&format!("; drawn into {}", output.display()));
            }
        }
        message.push('.');
        data["message"] = json!(message);
        Ok(data.into())
    }
}

/// Pixel box on the picture; with the `image` feature also draws it into `output`.
async fn render(image: PathBuf, output: PathBuf, chosen: SceneBox) -> Result<PixelBox, ToolError> {
    #[cfg(feature = "image")]
    {
        let job = tokio::task::spawn_blocking(move || {
            let (w, h) = draw::dimensions(&image)?;
            let px = chosen.to_pixels(w, h);
            draw::highlight_file(&image, &output, px)?;
            Ok::<_, draw::DrawError>(px)
        });
        match job.await {
            Ok(Ok(px)) => Ok(px),
            Ok(Err(e)) => Err(ToolError::failed(e.to_string())),
            Err(e) => Err(ToolError::failed(format!("drawing failed: {e}"))),
        }
    }
    #[cfg(not(feature = "image"))]
    {
        let _ = (image, output, chosen);
        Err(ToolError::failed(
            "this build has no image support (feature `image` of toolcall-packs)",
        ))
    }
}

fn read_json(path: &Path, what: &str) -> Result<Value, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?
        .len();
    if len > MAX_SCENE_BYTES {
        return Err(format!(
            "{what} {} is larger than {MAX_SCENE_BYTES} bytes",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{what} {} is not JSON: {e}", path.display()))
}

fn synonyms(value: Option<&Value>) -> Result<Synonyms, String> {
    let Some(value) = value else {
        return Ok(Synonyms::default());
    };
    let Value::Object(map) = value else {
        return Err("option \"synonyms\" must be an object {\"cup\": [\"mug\"]}".into());
    };
    let mut pairs = Vec::new();
    for (name, alts) in map {
        let alts = match alts {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| format!("synonyms of {name:?} must be strings"))?,
            _ => return Err(format!("synonyms of {name:?} must be a string or a list")),
        };
        pairs.push((name.clone(), alts));
    }
    Ok(Synonyms::from_pairs(pairs))
}

/// Loads the pack: options `scene`, `image`, `output`, `synonyms` (see the module doc).
pub fn pack(config: &PackConfig) -> Result<Pack, PackError> {
    let cfg = |message: String| PackError::Config {
        pack: "highlight".into(),
        message,
    };
    let scene = match config.options.get("scene") {
        Some(Value::String(p)) => read_json(&config.base_dir.join(p), "scene").map_err(cfg)?,
        Some(v @ (Value::Array(_) | Value::Object(_))) => v.clone(),
        Some(other) => {
            return Err(cfg(format!(
                "option \"scene\" must be a path or a scene, got {other}"
            )));
        }
        None => Value::Array(Vec::new()),
    };
    let boxes = parse_scene(scene).map_err(|e| cfg(format!("scene: {e}")))?;
    let mut tool = HighlightObject::new(
        boxes,
        synonyms(config.options.get("synonyms")).map_err(cfg)?,
    );
    match config.options.get("image") {
        None => {}
        Some(Value::String(p)) => {
            let image = config.base_dir.join(p);
            let output = match config.options.get("output") {
                Some(Value::String(o)) => config.base_dir.join(o),
                None => image.with_file_name("highlighted.png"),
                Some(other) => {
                    return Err(cfg(format!(
                        "option \"output\" must be a path, got {other}"
                    )));
                }
            };
            if output == image {
                return Err(cfg("option \"output\" must differ from \"image\"".into()));
            }
            tool = tool.with_image(image, output);
        }
        Some(other) => return Err(cfg(format!("option \"image\" must be a path, got {other}"))),
    }
    let mut registry = Registry::new();
    registry.add_tool(Arc::new(tool))?;
    Ok(Pack {
        name: "highlight",
        registry,
        state: None,
        on_end: None,
        round_output: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers P-HL
    #[test]
    fn pixels_cover_the_normalised_box() {
        let b = SceneBox {
            box_2d: [0, 0, 1000, 1000],
            label: "all".into(),
        };
        assert_eq!(
            b.to_pixels(200, 100),
            PixelBox {
                x0: 0,
                y0: 0,
                x1: 199,
                y1: 99
            }
        );
        let b = SceneBox {
            box_2d: [250, 100, 500, 300],
            label: "cup".into(),
        };
        assert_eq!(
            b.to_pixels(200, 100),
            PixelBox {
                x0: 20,
                y0: 25,
                x1: 59,
                y1: 49
            }
        );
    }

    // covers P-HL
    #[test]
    fn bad_scenes_are_refused() {
        assert!(parse_scene(json!([{"box_2d":[0,0,1001,5],"label":"x"}])).is_err());
        assert!(parse_scene(json!([{"box_2d":[10,0,5,5],"label":"x"}])).is_err());
        assert!(parse_scene(json!([{"box_2d":[0,0,5],"label":"x"}])).is_err());
        assert!(parse_scene(json!("cup")).is_err());
        assert_eq!(
            parse_scene(json!({"boxes":[{"box_2d":[0,0,5,5],"label":"x"}]}))
                .unwrap()
                .len(),
            1
        );
    }
}
