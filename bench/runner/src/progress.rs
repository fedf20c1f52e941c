//! The progress bar on the terminal (hidden when stderr is not one, as in tests).

use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

pub fn bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:32.cyan/blue} {pos}/{len} {elapsed_precise} (eta {eta}) {msg}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar
}

pub fn spinner(message: &str) -> ProgressBar {
    let spinner = ProgressBar::new_spinner();
    spinner.set_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
            .expect("a valid template"),
    );
    spinner.set_message(message.to_owned());
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner
}
