//! Prints the Breakpad symbol text ntdbg makes from a PDB: `pdb2sym FILE.pdb`.

fn main() -> std::process::ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: pdb2sym FILE.pdb");
        return std::process::ExitCode::from(2);
    };
    match ntdbg_symbols::pdb_to_breakpad(std::path::Path::new(&path)) {
        Ok(text) => {
            print!("{text}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
