//! Garage, a real S3-compatible object store (`garage` from `PATH` or `$NTDBG_GARAGE`; CI
//! builds it with `cargo install garage`), as a one-node cluster in a temporary folder: S3 API
//! and RPC on free loopback ports, one bucket, one key. Stopped (and its folder removed) on
//! drop.
//!
//! Skips, saying so on stderr, when no `garage` binary is found; with `NTDBG_REQUIRE_S3=1`
//! (CI, once it has installed Garage) that is a failure instead.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The bucket the tests use.
pub const BUCKET: &str = "crashes";
/// The access key imported into the cluster (Garage's form: `GK` and 24 hex digits).
const KEY_ID: &str = "GK38a1b2c3d4e5f6a7b8c9d0e1";
/// Its secret (64 hex digits).
const SECRET: &str = "38f1e2d3c4b5a69788796a5b4c3d2e1f0f1e2d3c4b5a69788796a5b4c3d2e1f0";
/// The region Garage answers for.
const REGION: &str = "garage";

/// A running one-node Garage.
pub struct Garage {
    bin: PathBuf,
    dir: PathBuf,
    config: PathBuf,
    s3_port: u16,
    child: Option<Child>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The `garage` binary: `$NTDBG_GARAGE`, else the first on `PATH`.
fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NTDBG_GARAGE") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("garage"))
        .find(|p| p.is_file())
}

impl Garage {
    /// Starts a cluster in a new folder for `test`, or says why not.
    pub fn start(test: &str) -> Result<Garage, String> {
        let bin = binary().ok_or("no garage binary (cargo install garage, or NTDBG_GARAGE)")?;
        let dir = std::env::temp_dir().join(format!("ntdbg-garage-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let (s3_port, rpc_port) = (free_port(), free_port());
        let config = dir.join("garage.toml");
        let text = format!(
            "metadata_dir = \"{meta}\"\ndata_dir = \"{data}\"\ndb_engine = \"sqlite\"\n\
             replication_factor = 1\nrpc_bind_addr = \"127.0.0.1:{rpc_port}\"\n\
             rpc_public_addr = \"127.0.0.1:{rpc_port}\"\n\
             rpc_secret = \"{SECRET}\"\n\n[s3_api]\ns3_region = \"{REGION}\"\n\
             api_bind_addr = \"127.0.0.1:{s3_port}\"\nroot_domain = \".s3.garage.localhost\"\n",
            meta = dir.join("meta").display(),
            data = dir.join("data").display(),
        );
        std::fs::write(&config, text).map_err(|e| e.to_string())?;
        let mut garage = Garage {
            bin,
            dir,
            config,
            s3_port,
            child: None,
        };
        let log =
            std::fs::File::create(garage.dir.join("server.log")).map_err(|e| e.to_string())?;
        let child = Command::new(&garage.bin)
            .arg("-c")
            .arg(&garage.config)
            .arg("server")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("garage server: {e}"))?;
        garage.child = Some(child);
        garage.set_up()?;
        Ok(garage)
    }

    fn cli(&self, args: &[&str]) -> Output {
        Command::new(&self.bin)
            .arg("-c")
            .arg(&self.config)
            .args(args)
            .output()
            .expect("garage runs")
    }

    fn must(&self, args: &[&str]) -> Result<String, String> {
        let out = self.cli(args);
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "garage {}: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// Waits for the node, gives it a role, imports the key, makes the bucket.
    fn set_up(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let node = loop {
            match self.must(&["node", "id", "-q"]) {
                Ok(id) if self.cli(&["status"]).status.success() => {
                    break id.trim().split('@').next().unwrap_or_default().to_string()
                }
                _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
                Ok(_) | Err(_) => {
                    return Err(format!(
                        "garage did not start: {}",
                        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
                    ))
                }
            }
        };
        self.must(&["layout", "assign", "-z", "dc1", "-c", "1G", &node])?;
        self.must(&["layout", "apply", "--version", "1"])?;
        self.must(&[
            "key",
            "import",
            "--yes",
            "-n",
            "ntdbg-tests",
            KEY_ID,
            SECRET,
        ])?;
        self.must(&["bucket", "create", BUCKET])?;
        self.must(&[
            "bucket", "allow", "--read", "--write", BUCKET, "--key", KEY_ID,
        ])?;
        Ok(())
    }

    /// The environment that points the S3 client at this cluster.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            (
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.s3_port),
            ),
            ("AWS_ACCESS_KEY_ID", KEY_ID.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET.to_string()),
            ("AWS_REGION", REGION.to_string()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Where its files are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Garage {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The cluster, or `None` after saying loudly why the test is skipped.
pub fn garage_or_skip(test: &str) -> Option<Garage> {
    match Garage::start(test) {
        Ok(g) => Some(g),
        Err(why) => {
            if std::env::var_os("NTDBG_REQUIRE_S3").is_some() {
                panic!("{test}: an S3 server (Garage) is required here but: {why}");
            }
            eprintln!("SKIPPED {test}: no S3 server: {why}");
            None
        }
    }
}
