//! A test PostgreSQL cluster dies with its test process, even one killed with `SIGKILL`
//! (no destructor runs then): CI never leaves a server running.
//!
//! The test binary re-runs itself as the child (`hold_a_cluster`, which does nothing unless
//! `TOOLCALL_PG_REAPER_CHILD` is set): it starts a cluster, prints its port and directory,
//! and waits. The parent kills it and watches the server go.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use toolcall_testkit::postgres::{Postgres, PostgresError};

const CHILD: &str = "TOOLCALL_PG_REAPER_CHILD";
/// What the child prints before its cluster's port and directory.
const MARK: &str = "toolcall-test-cluster: ";

#[test]
fn hold_a_cluster() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    match Postgres::start() {
        Ok(pg) => {
            // On a line of its own: libtest has written "test hold_a_cluster ... " before.
            println!("\n{MARK}{} {}", pg.port(), pg.dir().display());
            std::thread::sleep(Duration::from_secs(600));
            drop(pg);
        }
        Err(PostgresError::NotInstalled) => println!("\n{MARK}none"),
        Err(e) => panic!("{e}"),
    }
}

fn accepts(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

#[test]
fn a_cluster_dies_with_its_killed_test_process() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "hold_a_cluster",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let cluster = loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child said nothing"
        );
        if let Some(rest) = line.trim().strip_prefix(MARK) {
            break rest.to_owned();
        }
    };
    if cluster == "none" {
        child.wait().unwrap(); // it ends once it has said so
        toolcall_testkit::require("postgres", Err::<(), _>(PostgresError::NotInstalled));
        return;
    }
    let (port, dir) = cluster.split_once(' ').unwrap();
    let (port, dir): (u16, PathBuf) = (port.parse().unwrap(), dir.into());
    assert!(accepts(port), "the cluster is not up");
    assert!(dir.exists());

    child.kill().unwrap(); // SIGKILL: no destructor runs in the child.
    child.wait().unwrap();
    // The reaper stops the server (`pg_ctl -w` waits for it) and removes its directory.
    let deadline = Instant::now() + Duration::from_secs(60);
    while (accepts(port) || dir.exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !accepts(port),
        "the server outlived its killed test process"
    );
    assert!(!dir.exists(), "the cluster's directory was left behind");
}
