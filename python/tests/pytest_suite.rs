//! Runs the Python package's pytest suite (`python/tests/test_*.py`) against a wheel built
//! here, so `cargo test --workspace` covers the package.
//!
//! The wheel is built by maturin (debug profile, in the workspace's target directory, so the
//! dependencies `cargo test` already compiled are reused; cargo has released its lock by the
//! time tests run), installed with pip into a fresh directory (as a user's `pip install`
//! would lay it out: compiled module, Python layer, stubs, `py.typed`), and pytest runs from
//! the test venv with that directory first on `sys.path`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

fn run(what: &str, cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown by the harness only when the test fails (or with --nocapture).
    println!("--- {what} ---\n{stdout}\n{stderr}");
    assert!(out.status.success(), "{what} failed ({})", out.status);
}

#[test]
fn pytest_suite_passes_on_a_freshly_built_wheel() {
    let Some(python) = toolcall_testkit::require("python", toolcall_testkit::python()) else {
        return;
    };
    let root = toolcall_testkit::workspace_root();
    let target = target_dir(&root);
    let work = target.join("python-wheel");
    let wheels = work.join("wheels");
    let site = work.join("site");
    for dir in [&wheels, &site] {
        if dir.exists() {
            fs::remove_dir_all(dir).expect("clear the previous wheel");
        }
    }

    run(
        "maturin build",
        Command::new(&python)
            .args(["-m", "maturin", "build", "--quiet", "--interpreter"])
            .arg(&python)
            .arg("--manifest-path")
            .arg(root.join("python").join("Cargo.toml"))
            .arg("--out")
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", &target),
    );
    let wheel = fs::read_dir(&wheels)
        .expect("maturin wrote the wheel directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("maturin built a wheel");

    run(
        "pip install",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--no-index",
                "--target",
            ])
            .arg(&site)
            .arg(&wheel),
    );

    // From the workspace root, so `import toolcall` cannot find the source tree's
    // `python/toolcall` (which lacks the compiled module) before the installed package.
    run(
        "pytest",
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir"])
            .arg(root.join("python"))
            .arg("-c")
            .arg(root.join("python").join("pyproject.toml"))
            .arg(root.join("python").join("tests"))
            .current_dir(&root)
            .env("PYTHONPATH", &site)
            .env("TOOLCALL_ROOT", &root),
    );
}
