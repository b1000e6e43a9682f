//! How the interface a user runs from spells a setting, so that an error names what they typed:
//! `--series-bucket-s 95` and `--force` on the command line, `series_bucket_s=95` and
//! `force=True` in Python.

/// The interface a run was asked for from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Spelling {
    /// The command line (`schedlab simulate`).
    #[default]
    Cli,
    /// The Python package's keyword arguments.
    Python,
}

impl Spelling {
    /// RunSpec field `field` (snake_case) set to `value`, as this interface writes it.
    pub fn setting(self, field: &str, value: impl std::fmt::Display) -> String {
        match self {
            Spelling::Cli => format!("--{} {value}", field.replace('_', "-")),
            Spelling::Python => format!("{field}={value}"),
        }
    }

    /// What lifts a limit that protects the user (writing beside foreign files, a huge series).
    pub fn force(self) -> &'static str {
        match self {
            Spelling::Cli => "--force",
            Spelling::Python => "force=True",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Spelling;

    #[test]
    fn each_interface_spells_a_setting_its_own_way() {
        assert_eq!(Spelling::Cli.setting("series_bucket_s", 95), "--series-bucket-s 95");
        assert_eq!(Spelling::Python.setting("series_bucket_s", 95), "series_bucket_s=95");
        assert_eq!((Spelling::Cli.force(), Spelling::Python.force()), ("--force", "force=True"));
    }
}
