//! The analysis report of the real Windows 10 small dump `triage_x64.dmp` (bugcheck
//! 0x1000007E in amdppm.sys; expected values from rizin's test db and `EXPECTED.json`).

use ntdbg_engine::Session;

#[test]
fn triage_x64_report() {
    let dump = ntdbg_testutil::testdata("rizin-testbins/dmp/triage_x64.dmp");
    let symbols = ntdbg_testutil::testdata("rizin-test-pdb-repository");
    let session = match Session::open_dump(&dump, Some(&symbols.display().to_string())) {
        Ok(s) => s,
        Err(e) => panic!("open: {e}"),
    };
    let report = ntdbg_analysis::analyze(&session);
    let json = serde_json::to_value(&report).unwrap_or_default();
    assert_eq!(json["dump"]["kind"], "kernel-small");
    assert_eq!(json["dump"]["arch"], "x64");
    assert_eq!(json["dump"]["os_build"], "10.0.19041");
    assert_eq!(json["dump"]["modules"], 151);
    assert_eq!(json["event"]["type"], "bugcheck");
    assert_eq!(json["event"]["code"], "0x1000007e");
    assert_eq!(
        json["event"]["name"],
        "SYSTEM_THREAD_EXCEPTION_NOT_HANDLED_M"
    );
    assert_eq!(json["event"]["address"], "0xfffff8048b58334c");
    assert_eq!(json["event"]["thread_id"], "0x108");
    assert_eq!(
        json["event"]["parameters"],
        serde_json::json!([
            "0xffffffffc0000005",
            "0xfffff8048b58334c",
            "0xffff850429891ee8",
            "0xffff850429891720"
        ])
    );
    let desc = json["event"]["description"].as_str().unwrap_or_default();
    assert!(
        desc.contains("c0000005") && desc.contains("0xfffff8048b58334c"),
        "{desc}"
    );
    assert_eq!(json["faulting_module"]["name"], "amdppm.sys");
    assert_eq!(json["faulting_module"]["base"], "0xfffff8048b580000");
    assert_eq!(json["faulting_module"]["size"], "0x3b000");
    assert_eq!(json["faulting_module"]["timestamp"], "0xc9c03000");
    assert_eq!(
        json["signature"],
        "BUGCHECK_0x1000007E amdppm!WriteIoMemRawEx / amdppm!WriteGenAddrEx / amdppm!WriteGenAddrMaybeHiddenEx"
    );
    assert_eq!(json["stack"][0]["function"], "WriteIoMemRawEx");
    assert_eq!(json["stack"][0]["offset"], "0x70");
    assert_eq!(json["stack"][0]["found_by"], "context");
    assert_eq!(json["stack"][1]["found_by"], "cfi");
    let next: Vec<String> = report.next_commands.clone();
    assert!(
        next.contains(&".cxr 0xffff850429891720".to_string()),
        "{next:?}"
    );
    assert!(
        next.contains(&".exr 0xffff850429891ee8".to_string()),
        "{next:?}"
    );
}
