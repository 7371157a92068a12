//! The `roofprobe` binary: parse the command line, call the library, print an error once as
//! `error: …`, and choose the exit code (see `roofprobe::cli`).

use clap::Parser;

fn main() {
    let cli = roofprobe::cli::Cli::parse();
    match roofprobe::cli::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
