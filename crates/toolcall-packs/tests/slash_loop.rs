//! The slash pack through the executor and the agent loop: routed calls run (lookup at
//! once, summary and lab order as jobs), results keep their call ids and echo context ids.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolcall_packs::slash::{SlashSetup, route};
use toolcall_packs::{PackConfig, load_pack, slash};
use toolcall_run::{Executor, SessionFile};

fn example() -> std::path::PathBuf {
    common::example("slash")
}

fn config() -> PackConfig {
    let session = SessionFile::load(&example().join("session.json")).unwrap();
    PackConfig {
        base_dir: example(),
        options: common::options_of(&session.setup.packs["slash"]),
    }
}

// covers P-SLASH, X-4, R-8
#[tokio::test]
async fn routed_input_runs_immediately_and_as_jobs() {
    let setup = SlashSetup::load(&config()).unwrap();
    let calls = route("@Anna Nowak /summary /order lab CBC", &setup.context(None)).unwrap();
    let pack = slash::pack_from(setup).unwrap();
    let executor = Executor::new(Arc::new(pack.registry.clone()));
    let ids: Vec<_> = calls.iter().map(|c| c.call_id.clone()).collect();
    let results = executor.execute(calls, &Default::default()).await;
    common::assert_result_ids(&results, &ids);
    // The lookup answered at once, with its context id echoed.
    let lookup = results[0].to_json();
    assert_eq!(lookup["data"]["visit_id"], "vis_123");
    assert_eq!(lookup["metadata"]["context_id"], "mention:patient:pat_456");
    // Summary and lab order were started as jobs.
    for r in &results[1..] {
        assert_eq!(r.outcome.as_ref().unwrap().data["state"], "running");
    }
    // A hang guard: it returns as soon as both jobs are done.
    let mut done = executor.wait_jobs(Duration::from_secs(60)).await;
    done.sort_by(|a, b| a.result.name.cmp(&b.result.name));
    assert_eq!(done.len(), 2);
    let order = done[0].result.to_json();
    let summary = done[1].result.to_json();
    assert_eq!(done[0].result.call_id, ids[2]);
    assert_eq!(done[1].result.call_id, ids[1]);
    assert_eq!(summary["metadata"]["context_id"], "slash:summary:vis_123");
    assert_eq!(
        summary["data"]["assessment"],
        "Suspected community-acquired pneumonia."
    );
    assert_eq!(order["metadata"]["context_id"], "slash:order_lab:vis_123");
    assert_eq!(order["data"]["test"], "CBC");
    assert_eq!(order["data"]["call_id"], json!(ids[2]));
    assert_eq!(
        pack.state.as_ref().unwrap().snapshot()["tasks"][0]["task_id"],
        "task_0001"
    );
}

// covers P-SLASH, X-4
#[tokio::test]
async fn recorded_session_replays_with_job_results_delivered() {
    let session = SessionFile::load(&example().join("session.json")).unwrap();
    let pack = load_pack("slash", &config()).unwrap();
    // Jobs are awaited before each request, so the recording plays the same every time:
    // the third request already carries both job results and its reply is final (and every
    // recorded reply is used).
    let report = common::run_recorded(&session, &[&pack], true).await;
    let lookup = &report.rounds[0].results[0];
    assert_eq!(
        lookup.outcome.as_ref().unwrap().metadata["context_id"],
        "mention:patient:pat_456"
    );
    let jobs: Vec<_> = report
        .rounds
        .iter()
        .flat_map(|r| r.job_results.iter())
        .collect();
    assert_eq!(jobs.len(), 2, "{report:#?}");
    for j in jobs {
        let out = j.outcome.as_ref().unwrap();
        let expected = match j.call_id.as_str() {
            "call_summary_01" => "slash:summary:vis_123",
            "call_order_01" => "slash:order_lab:vis_123",
            other => panic!("unexpected job {other}"),
        };
        assert_eq!(out.metadata["context_id"], expected);
    }
    let final_text = report.final_text.unwrap();
    let expected = session.replies[session.replies.len() - 1]["content"]
        .as_str()
        .unwrap();
    assert_eq!(final_text, expected);
}
