//! Writes the benchmark corpus to a directory (default `target/bench-corpus`) for the Python
//! baselines: one `<n>.txt` per case (the reply), `<n>.<i>.json` per bare JSON document,
//! `manifest.json` listing them, and `tools.json` (the corpus registry as a tools file, for
//! the `toolcall` Python package).

use std::path::PathBuf;

use toolcall_bench::corpus;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "target/bench-corpus".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let mut manifest = Vec::new();
    for (i, case) in corpus::corpus().into_iter().enumerate() {
        let stem = format!("{i:02}");
        std::fs::write(dir.join(format!("{stem}.txt")), &case.text)?;
        let mut docs = Vec::new();
        for (j, doc) in case.json.iter().enumerate() {
            let file = format!("{stem}.{j}.json");
            std::fs::write(dir.join(&file), doc)?;
            docs.push(file);
        }
        manifest.push(serde_json::json!({
            "name": case.name, "format": case.format, "text": format!("{stem}.txt"),
            "json": docs, "expected_calls": case.expected_calls, "bytes": case.text.len(),
        }));
    }
    let specs: Vec<_> = corpus::registry().specs().cloned().collect();
    std::fs::write(
        dir.join("tools.json"),
        serde_json::to_string_pretty(&specs)?,
    )?;
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    eprintln!("wrote {} cases to {}", manifest.len(), dir.display());
    Ok(())
}
