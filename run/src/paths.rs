//! Paths in a RunSpec read from a file (regress.toml) start at that file's folder.

use crate::RunSpec;
use std::path::Path;

impl RunSpec {
    /// This spec with its relative paths (trace, a cluster file, queues, datasets, the file of
    /// a failure trace) taken from `dir` rather than the working directory. A cluster given
    /// as a shorthand (`4x8:V100`) and a failure model (`weibull:...`) name no file.
    pub fn relative_to(mut self, dir: &Path) -> RunSpec {
        for path in [&mut self.trace, &mut self.queues, &mut self.datasets].into_iter().flatten() {
            *path = dir.join(&*path);
        }
        if let Some(cluster) = &mut self.cluster
            && dir.join(&*cluster).is_file()
        {
            *cluster = dir.join(&*cluster).display().to_string();
        }
        if let Some(failures) = &mut self.failures
            && let Some((kind, rest)) = failures.split_once(':')
            && kind != "weibull"
        {
            // KIND:PATH[,settings]; an events file takes no settings, so its path may hold commas.
            let (file, settings) =
                if kind == "events" { (rest, "") } else { rest.split_once(',').unwrap_or((rest, "")) };
            let comma = if settings.is_empty() { "" } else { "," };
            *failures = format!("{kind}:{}{comma}{settings}", dir.join(file).display());
        }
        self
    }
}
