//! The parsers of outside input, reachable by the fuzz targets in `fuzz/` (compiled only under
//! cargo fuzz's `--cfg fuzzing`; no API promise). Each function hands its bytes to one parser
//! and returns what it returned; the targets assert the parser's contract.
