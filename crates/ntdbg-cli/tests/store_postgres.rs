//! The crash store on a real PostgreSQL server this test starts itself (`initdb` in a
//! temporary folder, listening on 127.0.0.1 and a Unix socket in that folder only).
//!
//! Skips, saying so on stderr, when no PostgreSQL server binaries are found or the server
//! cannot start; with `NTDBG_REQUIRE_POSTGRES=1` (CI, after `.ci/install-postgres.sh`) that is
//! a failure instead. As root the server runs as `nobody` (PostgreSQL refuses root).

#![cfg(unix)]

use crate::{s3_server, store_common};

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use store_common::collector::{upload, Running};
use store_common::{analysis_flags, copy_samples, counts, ok, triage_json};

/// Copies of each sample in the fleet test (`NTDBG_FLEET_COPIES` changes it).
const FLEET_COPIES: usize = 50;

/// A PostgreSQL server in a temporary folder, stopped (and the folder removed) on drop.
struct Server {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    run_as: Option<(u32, u32)>,
    child: Option<Child>,
}

/// The folder holding `initdb` and `postgres`: PostgreSQL 15's Debian folder, any other
/// version's, or `PATH`.
fn server_binaries() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    candidates.sort();
    candidates.reverse();
    candidates.extend(
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default(),
    );
    candidates
        .into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Server {
    /// Creates and starts a server, or says why not.
    fn start(test: &str) -> Result<Server, String> {
        let bin = server_binaries().ok_or("no initdb/postgres found (install postgresql)")?;
        let dir = std::env::temp_dir().join(format!("ntdbg-pg-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let run_as = is_root().then_some((65534, 65534));
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
        }
        let mut server = Server {
            bin,
            dir,
            port: free_port(),
            run_as,
            child: None,
        };
        let data = server.dir.join("data");
        let out = server
            .command("initdb")
            .args(["-D", data.to_str().unwrap(), "-U", "ntdbg", "--auth=trust"])
            .args(["--no-sync", "-E", "UTF8", "--locale=C"])
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        server.run()?;
        Ok(server)
    }

    fn command(&self, program: &str) -> Command {
        use std::os::unix::process::CommandExt;
        let mut c = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.run_as {
            c.uid(uid).gid(gid);
        }
        c.current_dir(&self.dir);
        c
    }

    fn url(&self) -> String {
        format!("postgres://ntdbg@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts `postgres` and waits (at most 30 s) until it accepts connections.
    fn run(&mut self) -> Result<(), String> {
        let log = std::fs::File::create(self.dir.join("server.log")).map_err(|e| e.to_string())?;
        if let Some((uid, gid)) = self.run_as {
            let _ = std::os::unix::fs::chown(self.dir.join("server.log"), Some(uid), Some(gid));
        }
        let child = self
            .command("postgres")
            .args(["-D", self.dir.join("data").to_str().unwrap()])
            .args(["-k", self.dir.to_str().unwrap(), "-h", "127.0.0.1"])
            .args(["-p", &self.port.to_string(), "-c", "fsync=off"])
            .args(["-c", "max_connections=50"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && ntdbg_store::Store::open(&self.location()).is_ok()
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(format!(
            "postgres did not start: {}",
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        ))
    }

    fn location(&self) -> ntdbg_store::DbLocation {
        ntdbg_store::DbLocation::Postgres(self.url())
    }

    /// Fast shutdown (SIGINT: open connections are cut), waited for.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The server, or `None` after saying loudly why the test is skipped.
fn server_or_skip(test: &str) -> Option<Server> {
    match Server::start(test) {
        Ok(s) => Some(s),
        Err(why) => {
            if std::env::var_os("NTDBG_REQUIRE_POSTGRES").is_some() {
                panic!("{test}: PostgreSQL is required here but: {why}");
            }
            eprintln!("SKIPPED {test}: no PostgreSQL server: {why}");
            None
        }
    }
}

fn ntdbg() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ntdbg"));
    c.env_remove("_NT_SYMBOL_PATH");
    c
}

fn crashes_json(url: &str) -> Value {
    serde_json::from_str(&ok(ntdbg()
        .args(["crashes", "--db", url, "--json"])
        .output()
        .unwrap()))
    .expect("JSON")
}

#[test]
fn ingest_and_crashes_on_postgres() {
    let Some(server) = server_or_skip("ingest_and_crashes_on_postgres") else {
        return;
    };
    let dir = server.dir.join("ingest");
    let n = copy_samples(&dir, 2);
    let url = server.url();
    let first = ok(ntdbg()
        .arg("ingest")
        .arg(&dir)
        .args(["--db", &url])
        .args(analysis_flags())
        .output()
        .unwrap());
    assert!(
        first.contains(&format!("{n} dump(s): {n} recorded")),
        "{first}"
    );
    let again = ok(ntdbg()
        .arg("ingest")
        .arg(&dir)
        .args(["--db", &url])
        .args(analysis_flags())
        .output()
        .unwrap());
    assert!(again.contains("0 recorded"), "{again}");
    let stored = crashes_json(&url);
    assert_eq!(stored["dumps"], n);
    assert_eq!(counts(&stored), counts(&triage_json(&dir)));
}

fn worker(url: &str) -> Child {
    ntdbg()
        .args(["worker", "--db", url, "--lease", "3"])
        .args(analysis_flags())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("worker starts")
}

/// How many dumps are recorded (asked of the database directly, reconnecting while it is
/// down).
fn recorded(server: &Server) -> u64 {
    let Ok(mut store) = ntdbg_store::Store::open(&server.location()) else {
        return 0;
    };
    match store.crashes(&ntdbg_store::CrashQuery::default()) {
        Ok(ntdbg_store::CrashesAnswer::Buckets(b)) => b.dumps as u64,
        _ => 0,
    }
}

#[test]
fn a_fleet_of_workers_survives_a_kill_and_a_database_restart() {
    let Some(mut server) =
        server_or_skip("a_fleet_of_workers_survives_a_kill_and_a_database_restart")
    else {
        return;
    };
    let copies = std::env::var("NTDBG_FLEET_COPIES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(FLEET_COPIES);
    let dir = server.dir.join("fleet");
    let n = copy_samples(&dir, copies);
    let url = server.url();
    let queued = ok(ntdbg()
        .arg("enqueue")
        .arg(&dir)
        .args(["--db", &url])
        .output()
        .unwrap());
    assert!(
        queued.starts_with(&format!("{n} dump(s) queued")),
        "{queued}"
    );

    let mut workers: Vec<Child> = (0..4).map(|_| worker(&url)).collect();
    let deadline = Instant::now() + Duration::from_secs(900);
    // A third of the way: kill one worker mid-dump.
    while recorded(&server) < n as u64 / 3 {
        assert!(Instant::now() < deadline, "the workers made no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut killed = workers.remove(0);
    killed.kill().expect("SIGKILL");
    let _ = killed.wait();
    // Two thirds: restart the database under the other three.
    while recorded(&server) < 2 * n as u64 / 3 {
        assert!(Instant::now() < deadline, "the workers made no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.stop();
    std::thread::sleep(Duration::from_secs(1));
    server.run().expect("the database restarts");

    let mut reconnected = 0;
    for w in workers {
        let out = w.wait_with_output().expect("worker ends");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "worker failed: {stderr}");
        reconnected += usize::from(stderr.contains("reconnecting"));
    }
    assert!(reconnected > 0, "no worker saw the database restart");
    let mut store = ntdbg_store::Store::open(&server.location()).expect("store");
    assert_eq!(store.queued().expect("queue"), 0, "the queue is empty");
    let stored = crashes_json(&url);
    assert_eq!(stored["dumps"], n, "every dump recorded exactly once");
    let total: u64 = counts(&stored).values().sum();
    assert_eq!(
        total as usize + stored["failed"].as_array().unwrap().len(),
        n
    );
    assert_eq!(counts(&stored), counts(&triage_json(&dir)));
}

/// A worker that reads symbols only from the store its dumps come from.
fn store_worker(url: &str, env: &[(String, String)]) -> Child {
    ntdbg()
        .args(["worker", "--db", url, "--lease", "3", "--offline"])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("worker starts")
}

/// The crash ids (content hashes) of every recorded dump, as their object URLs name them,
/// each as many times as it is recorded.
fn recorded_ids(stored: &Value) -> Vec<String> {
    let mut ids: Vec<String> = stored["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .flat_map(|b| b["dumps"].as_array().expect("dumps").iter())
        .map(|d| {
            let url = d.as_str().expect("a location");
            assert!(url.starts_with("s3://"), "recorded from the store: {url}");
            url.rsplit('/')
                .next()
                .unwrap()
                .trim_end_matches(".dmp")
                .to_string()
        })
        .collect();
    ids.sort();
    ids
}

#[test]
fn collected_reports_in_s3_survive_a_collector_kill_a_worker_kill_and_a_database_restart() {
    let test = "collected_reports_in_s3_survive";
    let Some(mut server) = server_or_skip(test) else {
        return;
    };
    let Some(garage) = s3_server::garage_or_skip(test) else {
        return;
    };
    let copies = std::env::var("NTDBG_FLEET_COPIES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(FLEET_COPIES);
    let env = garage.env();
    let url = server.url();
    let store = format!("s3://{}/fleet", s3_server::BUCKET);
    let samples: Vec<PathBuf> = store_common::SAMPLES
        .iter()
        .map(|s| ntdbg_testutil::sample(s))
        .collect();

    // The build's symbols go up first; nothing else names them to the workers.
    let uploaded = ok(ntdbg()
        .args(["symbols", "upload"])
        .arg(ntdbg_testutil::sample("crashy.pdb"))
        .arg(ntdbg_testutil::sample("crashy.exe"))
        .args(["--store", &store])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap());
    assert!(uploaded.contains("2 file(s) uploaded"), "{uploaded}");

    let tokens = garage.dir().join("tokens.txt");
    std::fs::write(&tokens, "crashy fleet-token\n").unwrap();
    let collector_args: Vec<String> = [
        "collect",
        "--listen",
        "127.0.0.1:0",
        "--db",
        &url,
        "--store",
        &store,
        "--tokens",
        tokens.to_str().unwrap(),
        "--rate-limit",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut collector = Running::start(&collector_args, &env);
    let first_wave = copies - copies / 5;
    let sent = upload(
        &collector.submit_url(Some("fleet-token")),
        &samples,
        first_wave,
        &["--product", "crashy", "--version", "1.0"],
    );
    let mut accepted: Vec<String> = Vec::new();
    for s in &sent {
        assert_eq!(s.status, 200, "{s:?}\n{}", collector.log());
        accepted.push(s.answer.clone());
    }
    // Killed right after answering: what it answered is already safe.
    collector.kill();
    let collector = Running::start(&collector_args, &env);

    let mut workers: Vec<Child> = (0..4).map(|_| store_worker(&url, &env)).collect();
    let deadline = Instant::now() + Duration::from_secs(900);
    while recorded(&server) < accepted.len() as u64 / 3 {
        assert!(Instant::now() < deadline, "the workers made no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut killed = workers.remove(0);
    killed.kill().expect("SIGKILL");
    let _ = killed.wait();
    while recorded(&server) < 2 * accepted.len() as u64 / 3 {
        assert!(Instant::now() < deadline, "the workers made no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A second wave arrives while the database restarts: the collector holds the uploads
    // until it is back, then answers.
    let submit = collector.submit_url(Some("fleet-token"));
    let second = samples.clone();
    let wave = std::thread::spawn(move || {
        upload(
            &submit,
            &second,
            copies / 5,
            &[
                "--product",
                "crashy",
                "--version",
                "1.1",
                "--salt",
                "second",
            ],
        )
    });
    server.stop();
    std::thread::sleep(Duration::from_secs(1));
    server.run().expect("the database restarts");
    for s in wave.join().expect("the second wave") {
        assert_eq!(s.status, 200, "{s:?}\n{}", collector.log());
        accepted.push(s.answer);
    }
    for w in workers {
        let out = w.wait_with_output().expect("worker ends");
        assert!(
            out.status.success(),
            "worker failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Whatever the second wave queued after the workers found the queue empty.
    let last = store_worker(&url, &env)
        .wait_with_output()
        .expect("worker ends");
    assert!(
        last.status.success(),
        "{}",
        String::from_utf8_lossy(&last.stderr)
    );

    let stored = crashes_json(&url);
    accepted.sort();
    assert_eq!(accepted.len(), samples.len() * copies);
    assert_eq!(
        recorded_ids(&stored),
        accepted,
        "every accepted report recorded exactly once"
    );
    assert!(stored["failed"].as_array().unwrap().is_empty(), "{stored}");
    // Named with the uploaded symbols, and bucketed as triage buckets the samples.
    let one_each = server.dir.join("one-each");
    copy_samples(&one_each, 1);
    let expected: std::collections::BTreeMap<String, u64> = counts(&triage_json(&one_each))
        .into_iter()
        .map(|(sig, n)| (sig, n * copies as u64))
        .collect();
    assert_eq!(counts(&stored), expected);
    assert!(expected.keys().any(|s| s.contains("crashy!write_null")));
}
