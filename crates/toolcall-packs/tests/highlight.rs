//! highlight_object through the pack: matching, the "what is in view" answer, and the PNG
//! written with the box drawn (checked pixel by pixel).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

#[cfg(feature = "image")]
use image::{Rgba, RgbaImage};
use serde_json::{Map, Value, json};
use toolcall_core::{ErrorCode, ToolContext, ToolError, ToolOutput};
use toolcall_packs::{Pack, PackConfig, load_pack};

fn scene() -> Value {
    json!([
        {"box_2d": [100, 100, 400, 300], "label": "cup"},
        {"box_2d": [500, 500, 900, 950], "label": "headphones"},
        {"box_2d": [0, 600, 300, 1000], "label": "glasses"},
        {"box_2d": [600, 0, 700, 100], "label": "cup"}
    ])
}

fn pack_with(dir: &Path, extra: Value) -> Pack {
    let mut options = Map::new();
    options.insert("scene".into(), json!("scene.json"));
    std::fs::write(dir.join("scene.json"), scene().to_string()).unwrap();
    if let Value::Object(m) = extra {
        options.extend(m);
    }
    common::load("highlight", dir, options)
}

async fn call(p: &Pack, args: Value) -> Result<ToolOutput, ToolError> {
    common::call_with(p, &ToolContext::default(), "highlight_object", args).await
}

#[cfg(feature = "image")]
/// A picture whose every pixel differs, so "unchanged" really means something.
fn background(x: u32, y: u32) -> Rgba<u8> {
    Rgba([
        (x % 251) as u8,
        (y % 241) as u8,
        ((x + y) % 7) as u8 * 30,
        255,
    ])
}

// covers P-HL
#[tokio::test]
async fn names_case_articles_plurals_and_synonyms_match() {
    let dir = tempfile::tempdir().unwrap();
    let p = pack_with(
        dir.path(),
        json!({"synonyms": {"glasses": ["spectacles"], "headphones": "earphones"}}),
    );
    for (asked, label, box_2d) in [
        ("cup", "cup", [100, 100, 400, 300]),
        ("The CUPS", "cup", [100, 100, 400, 300]),
        ("my headphones", "headphones", [500, 500, 900, 950]),
        ("headphone", "headphones", [500, 500, 900, 950]),
        ("a glass", "glasses", [0, 600, 300, 1000]),
        ("your spectacles", "glasses", [0, 600, 300, 1000]),
        ("earphones", "headphones", [500, 500, 900, 950]),
    ] {
        let out = call(&p, json!({"object": asked})).await.unwrap();
        assert_eq!(out.data["label"], label, "{asked}");
        assert_eq!(out.data["box_2d"], json!(box_2d), "{asked}");
        assert!(
            out.data["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("Highlighted the {label}"))
        );
    }
}

// covers P-HL
#[tokio::test]
async fn missing_object_says_what_is_in_view() {
    let dir = tempfile::tempdir().unwrap();
    let p = pack_with(dir.path(), json!({}));
    let err = call(&p, json!({"object": "laptop"})).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ToolFailed);
    assert_eq!(
        err.message,
        "No \"laptop\" in view. In view: cup, headphones, glasses."
    );
    assert_eq!(
        err.details.unwrap()["in_view"],
        json!(["cup", "headphones", "glasses"])
    );
    for bad in [json!({}), json!({"object": ""}), json!({"object": 3})] {
        assert_eq!(call(&p, bad).await.unwrap_err().code, ErrorCode::ToolFailed);
    }
}

// covers P-HL
#[cfg(feature = "image")]
#[tokio::test]
async fn draws_the_box_into_a_png_and_leaves_other_pixels_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (400u32, 300u32);
    let img = RgbaImage::from_fn(w, h, background);
    img.save(dir.path().join("desk.png")).unwrap();
    let p = pack_with(
        dir.path(),
        json!({"image": "desk.png", "output": "out/hl.png"}),
    );
    // Output directory missing → a clear error, not a panic.
    let err = call(&p, json!({"object": "cup"})).await.unwrap_err();
    assert!(
        err.message.contains("cannot write image"),
        "{}",
        err.message
    );
    std::fs::create_dir(dir.path().join("out")).unwrap();

    let out = call(&p, json!({"object": "cup"})).await.unwrap();
    // [y0,x0,y1,x1] = [100,100,400,300] on 400×300 → x 40..=119, y 30..=119.
    assert_eq!(out.data["pixel_box"], json!([40, 30, 119, 119]));
    let drawn = image::open(dir.path().join("out/hl.png"))
        .unwrap()
        .to_rgba8();
    assert_eq!(drawn.dimensions(), (w, h));
    let red = Rgba([255, 0, 0, 255]);
    let t = 2; // thickness for a 300-pixel side
    let mut border = 0;
    for y in 0..h {
        for x in 0..w {
            let inside = (40..=119).contains(&x) && (30..=119).contains(&y);
            let on_border = inside && (x < 40 + t || x > 119 - t || y < 30 + t || y > 119 - t);
            let px = *drawn.get_pixel(x, y);
            if on_border {
                assert_eq!(px, red, "border pixel {x},{y}");
                border += 1;
            } else {
                assert_eq!(px, background(x, y), "pixel {x},{y} changed");
            }
        }
    }
    assert_eq!(border, 2 * 80 * 2 + 2 * (90 - 4) * 2);
}

// covers P-HL
#[test]
fn pack_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let load = |options: Value| {
        let Value::Object(options) = options else {
            unreachable!()
        };
        load_pack(
            "highlight",
            &PackConfig {
                base_dir: dir.path().to_owned(),
                options,
            },
        )
    };
    // No options: an empty scene, so the tool lists and answers that nothing is in view.
    assert!(load(json!({})).is_ok());
    assert!(load(json!({"scene": "missing.json"})).is_err());
    assert!(load(json!({"scene": [{"box_2d": [0, 0, 2000, 1], "label": "x"}]})).is_err());
    assert!(load(json!({"scene": [], "synonyms": {"cup": 3}})).is_err());
    assert!(load(json!({"scene": [], "image": "a.png", "output": "a.png"})).is_err());
    assert!(load(json!({"scene": [{"box_2d": [0, 0, 10, 10], "label": "x"}]})).is_ok());
}

// covers P-HL (the shipped example's pack options load and its call succeeds)
#[cfg(feature = "image")]
#[tokio::test]
async fn shipped_example_highlights_the_headphones() {
    let example = common::example("highlight");
    let session = common::read_session(&example);
    let mut options = common::options_of(&session["setup"]["packs"]["highlight"]);
    // Write into a temp dir instead of the example folder.
    let out = tempfile::tempdir().unwrap();
    let target = std::env::var("HIGHLIGHT_EXAMPLE_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| out.path().join("highlighted.png"));
    options.insert("output".into(), json!(target));
    let p = common::load("highlight", &example, options);
    let reply = session["replies"][0]["content"].as_str().unwrap();
    let object = reply
        .lines()
        .find_map(|l| l.strip_prefix("OBJECT: "))
        .unwrap();
    let res = call(&p, json!({"object": object})).await.unwrap();
    assert_eq!(res.data["label"], "headphones");
    // 640×480: [150,630,460,950] → x 403..=607, y 72..=220.
    assert_eq!(res.data["pixel_box"], json!([403, 72, 607, 220]));
    let drawn = image::open(&target).unwrap().to_rgba8();
    assert_eq!(*drawn.get_pixel(403, 100), Rgba([255, 0, 0, 255]));
}

// covers V-1 (the shipped tools file is exactly what the pack registers)
#[test]
fn shipped_tools_file_matches_the_pack() {
    common::assert_shipped_tools_file_matches("highlight");
}
