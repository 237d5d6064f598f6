//! The explain pages (`magus explain MGS2001`), embedded from `docs/` so the
//! binary needs no files at run time.

use super::Code;

/// The Markdown page for `code`.
pub(crate) fn explain_page(code: Code) -> &'static str {
    match code {
        Code::Mgs1001 => include_str!("../../docs/MGS1001.md"),
        Code::Mgs1002 => include_str!("../../docs/MGS1002.md"),
        Code::Mgs1003 => include_str!("../../docs/MGS1003.md"),
        Code::Mgs1004 => include_str!("../../docs/MGS1004.md"),
        Code::Mgs1005 => include_str!("../../docs/MGS1005.md"),
        Code::Mgs1006 => include_str!("../../docs/MGS1006.md"),
        Code::Mgs1007 => include_str!("../../docs/MGS1007.md"),
        Code::Mgs1008 => include_str!("../../docs/MGS1008.md"),
        Code::Mgs1009 => include_str!("../../docs/MGS1009.md"),
        Code::Mgs1010 => include_str!("../../docs/MGS1010.md"),
        Code::Mgs1011 => include_str!("../../docs/MGS1011.md"),
        Code::Mgs1012 => include_str!("../../docs/MGS1012.md"),
        Code::Mgs1013 => include_str!("../../docs/MGS1013.md"),
        Code::Mgs1014 => include_str!("../../docs/MGS1014.md"),
        Code::Mgs1015 => include_str!("../../docs/MGS1015.md"),
        Code::Mgs1016 => include_str!("../../docs/MGS1016.md"),
        Code::Mgs1017 => include_str!("../../docs/MGS1017.md"),
        Code::Mgs1018 => include_str!("../../docs/MGS1018.md"),
        Code::Mgs1019 => include_str!("../../docs/MGS1019.md"),
        Code::Mgs1020 => include_str!("../../docs/MGS1020.md"),
        Code::Mgs1021 => include_str!("../../docs/MGS1021.md"),
        Code::Mgs1022 => include_str!("../../docs/MGS1022.md"),
        Code::Mgs1023 => include_str!("../../docs/MGS1023.md"),
        Code::Mgs1024 => include_str!("../../docs/MGS1024.md"),
        Code::Mgs1025 => include_str!("../../docs/MGS1025.md"),
        Code::Mgs1026 => include_str!("../../docs/MGS1026.md"),
        Code::Mgs2001 => include_str!("../../docs/MGS2001.md"),
        Code::Mgs2002 => include_str!("../../docs/MGS2002.md"),
        Code::Mgs2003 => include_str!("../../docs/MGS2003.md"),
        Code::Mgs2004 => include_str!("../../docs/MGS2004.md"),
        Code::Mgs2005 => include_str!("../../docs/MGS2005.md"),
        Code::Mgs2006 => include_str!("../../docs/MGS2006.md"),
        Code::Mgs2007 => include_str!("../../docs/MGS2007.md"),
        Code::Mgs2008 => include_str!("../../docs/MGS2008.md"),
        Code::Mgs2010 => include_str!("../../docs/MGS2010.md"),
        Code::Mgs2011 => include_str!("../../docs/MGS2011.md"),
        Code::Mgs2012 => include_str!("../../docs/MGS2012.md"),
        Code::Mgs2013 => include_str!("../../docs/MGS2013.md"),
        Code::Mgs2014 => include_str!("../../docs/MGS2014.md"),
        Code::Mgs3001 => include_str!("../../docs/MGS3001.md"),
        Code::Mgs3002 => include_str!("../../docs/MGS3002.md"),
        Code::Mgs3003 => include_str!("../../docs/MGS3003.md"),
        Code::Mgs3004 => include_str!("../../docs/MGS3004.md"),
        Code::Mgs3005 => include_str!("../../docs/MGS3005.md"),
        Code::Mgs3006 => include_str!("../../docs/MGS3006.md"),
        Code::Mgs3007 => include_str!("../../docs/MGS3007.md"),
        Code::Mgs3008 => include_str!("../../docs/MGS3008.md"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_page_that_names_it() {
        for code in Code::ALL {
            let page = explain_page(code);
            assert!(page.starts_with(&format!("# {code}")), "{code}");
        }
    }
}
