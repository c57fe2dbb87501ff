// The CSV writer: quoting, numbers, and rows that must match the header.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "nibble/io/csv.h"

namespace nibble::io {
namespace {

TEST(Csv, QuotesOnlyWhatNeedsIt) {
  CsvTable t({"name", "note, with comma"});
  t.add({"e2m1+e1m2+int4", "plain"});
  t.add({"say \"hi\"", "two\nlines"});
  t.add({std::string("cr\r"), std::string_view("")});
  EXPECT_EQ(t.text(),
            "name,\"note, with comma\"\n"
            "e2m1+e1m2+int4,plain\n"
            "\"say \"\"hi\"\"\",\"two\nlines\"\n"
            "\"cr\r\",\n");
  EXPECT_EQ(t.rows(), 3u);
  EXPECT_EQ(t.columns(), 2u);
}

TEST(Csv, NumbersRoundTripAFloatAndNonFiniteIsNaN) {
  EXPECT_EQ(csv_number(0.1f), "0.100000001");
  EXPECT_EQ(static_cast<float>(std::stod(csv_number(0.1f))), 0.1f);
  EXPECT_EQ(csv_number(-2.5), "-2.5");
  EXPECT_EQ(csv_number(1e-30), "1e-30");
  EXPECT_EQ(csv_number(std::numeric_limits<double>::infinity()), "NaN");
  EXPECT_EQ(csv_number(-std::numeric_limits<double>::infinity()), "NaN");
  EXPECT_EQ(csv_number(std::nan("")), "NaN");
  CsvTable t({"i", "u", "x"});
  t.add({-3, uint64_t{18446744073709551615u}, 0.5});
  EXPECT_EQ(t.text(), "i,u,x\n-3,18446744073709551615,0.5\n");
}

TEST(Csv, RowsMustMatchTheHeader) {
  CsvTable t({"a", "b"});
  EXPECT_THROW(t.add({1}), std::logic_error);
  EXPECT_THROW(t.add({1, 2, 3}), std::logic_error);
  EXPECT_EQ(t.rows(), 0u);
  EXPECT_EQ(t.text(), "a,b\n");
  EXPECT_THROW(CsvTable({}), std::logic_error);
}

}  // namespace
}  // namespace nibble::io
