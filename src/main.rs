//! The `roofprobe` binary: parse the command line, call the library, print an error once as
//! `error: …`, and choose the exit code (see `roofprobe::cli`).

use clap::Parser;

fn main() {
    // Past a file-size limit (`ulimit -f`) the kernel's SIGXFSZ would end the process with no
    // error line and a temporary file left behind; ignored, the write fails with EFBIG instead,
    // and the usual path takes over: one `error:` line, the temporary file removed, the rows
    // already in a CSV kept whole.
    // SAFETY: setting a signal to SIG_IGN installs no handler and runs before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
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
