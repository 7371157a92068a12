//! The `roofprobe` binary: parse the command line, call the library, print an error once as
//! `error: …`, and choose the exit code (see `roofprobe::cli`).

use clap::Parser;

fn main() {
    let cli = roofprobe::cli::Cli::parse();
    match roofprobe::cli::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // One line, whatever a file or a driver put in the message.
            roofprobe::say!("error: {}", roofprobe::text::one_line(&e.to_string()));
            let code = match e {
                roofprobe::Error::Usage(_) => roofprobe::cli::EXIT_USAGE,
                roofprobe::Error::Interrupted(_) => roofprobe::run::interrupt::EXIT_INTERRUPTED,
                _ => 1,
            };
            std::process::exit(code);
        }
    }
}
