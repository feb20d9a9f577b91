//! `CTXGATE_DUMP_CANDIDATES`: an `assemble` call also writes every ranked candidate with its
//! signals, for fitting the ranking weights offline (scripts/learn-fusion.sh).

mod common;

use common::{Env, json, stderr};

#[test]
fn every_candidate_is_dumped_with_its_lines_and_signals() {
    let env = Env::new();
    env.sample();
    env.write(
        "tests/config_test.rs",
        "/// Parses the configuration in a test.\nfn parse_config_in_a_test() {}\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("candidates.json");
    let out = env
        .cmd()
        .env("CTXGATE_DUMP_CANDIDATES", &dump)
        .args(["assemble", "--repo", &env.repo_arg()])
        .args([
            "--query",
            "parse the configuration file",
            "--budget",
            "2000",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The prompt is assembled as usual.
    assert!(!json(&out)["pieces"].as_array().unwrap().is_empty());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&dump).unwrap()).unwrap();
    assert_eq!(v["wants_tests"], false);
    let cands = v["candidates"].as_array().unwrap();
    // Best first: the definition the request names leads, its lines and signals with it.
    let top = &cands[0];
    assert_eq!(top["path"], "src/config.rs", "{v}");
    assert!(top["start_line"].as_u64().unwrap() >= 1);
    assert!(top["end_line"].as_u64() >= top["start_line"].as_u64());
    assert!(top["tokens"].as_u64().unwrap() > 0);
    assert_eq!(top["signals"]["lexical"], 1.0);
    let scores: Vec<f64> = cands.iter().map(|c| c["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // The test file is a candidate, flagged, with the test prior applied.
    let test = cands
        .iter()
        .find(|c| c["path"] == "tests/config_test.rs")
        .unwrap_or_else(|| panic!("the test file among the candidates: {v}"));
    assert_eq!(test["test"], true);
    assert!(test["signals"]["prior"].as_f64().unwrap() < 1.0);
}
