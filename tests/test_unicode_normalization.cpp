#include "text/unicode_normalization.h"

#include <gtest/gtest.h>

namespace tapdiff::text {

namespace {

// Values from UAX #15's examples and Python's unicodedata.normalize (the conformance suite holds
// every decomposable code point to Hugging Face tokenizers' normalizers).
TEST(UnicodeNormalization, ComposesDecomposesAndOrdersAsUnicodeSays) {
  using enum UnicodeForm;
  EXPECT_EQ(normalize("e\u0301", nfc), "\u00e9");
  EXPECT_EQ(normalize("\u00e9", nfd), "e\u0301");
  EXPECT_EQ(normalize("\u212b", nfc), "\u00c5");                            // ANGSTROM SIGN: a singleton
  EXPECT_EQ(normalize("\u1100\u1161\u11a8", nfc), "\uac01");                // Hangul L V T
  EXPECT_EQ(normalize("\uac01", nfd), "\u1100\u1161\u11a8");                // and back
  EXPECT_EQ(normalize("a\u0307\u0323", nfc), "\u1ea1\u0307");               // dot below (220) first, then composed
  EXPECT_EQ(normalize("a\u0323\u0323\u0307", nfd), "a\u0323\u0323\u0307");  // equal classes keep their order
  EXPECT_EQ(normalize("\u1e9b\u0323", nfc), "\u1e9b\u0323");                // long s with dot above: unchanged
  EXPECT_EQ(normalize("\u1e9b\u0323", nfkc), "\u1e69");                     // s, dot below, dot above: one
  EXPECT_EQ(normalize("\ufb01 \u2460 x\u00b2", nfkc), "fi 1 x2");           // compatibility mappings
  EXPECT_EQ(normalize("\ufb01", nfc), "\ufb01");                            // not canonical
  EXPECT_EQ(normalize("\u0344", nfc), "\u0308\u0301");                      // excluded from composition
  EXPECT_EQ(normalize("e\u0301\u0301", nfc), "\u00e9\u0301");               // the second accent is blocked
  EXPECT_EQ(normalize("plain ASCII", nfkc), "plain ASCII");
  EXPECT_EQ(normalize("e\xff\u0301", nfc), "e\xff\u0301");  // a byte that is not UTF-8 stays, blocking
  EXPECT_EQ(normalize("e\u0301", none), "e\u0301");
}

TEST(UnicodeNormalization, FormsAreNamedAsTokenizersNamesThem) {
  for (const UnicodeForm form : {UnicodeForm::nfc, UnicodeForm::nfd, UnicodeForm::nfkc, UnicodeForm::nfkd})
    EXPECT_EQ(unicode_form_named(unicode_form_name(form)), form);
  EXPECT_EQ(unicode_form_named("Lowercase"), UnicodeForm::none);
}

}  // namespace
}  // namespace tapdiff::text
