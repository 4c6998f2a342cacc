#pragma once
// Unicode's normalization forms (UAX #15), as tokenizers' NFC, NFD, NFKC and NFKD normalizers
// apply them to text: full canonical or compatibility decomposition (Hangul syllables by the
// algorithm), canonical ordering of combining marks, and for NFC and NFKC canonical composition.
// The data are Unicode 9.0's, as tokenizers' (text/unicode_normalization_tables.h): a character
// added since is left as it is. Bytes that are not UTF-8 are kept as they are, each one a boundary
// that nothing composes across.
#include <cstdint>
#include <string>
#include <string_view>

namespace tapdiff::text {

enum class UnicodeForm : std::uint8_t { none, nfc, nfd, nfkc, nfkd };

// "NFC", "NFD", "NFKC", "NFKD" (tokenizers' normalizer types); none for anything else.
UnicodeForm unicode_form_named(std::string_view name);
std::string_view unicode_form_name(UnicodeForm form);  // "" for none

std::string normalize(std::string_view text, UnicodeForm form);

}  // namespace tapdiff::text
