// OutputFiles (file_io.h): a run's files appear together on commit, or not at all.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "lib/support/file_io.h"

namespace poprt {
namespace {

namespace fs = std::filesystem;

class OutputFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "poprt-output-files-XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static size_t entries(const fs::path& d) {
    return static_cast<size_t>(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
  }
  fs::path dir_;
};

TEST_F(OutputFilesTest, CommitPutsEveryFileInPlace) {
  { std::ofstream(dir_ / "a.txt") << "old"; }
  OutputFiles files;
  ASSERT_TRUE(files.add(dir_ / "a.txt", std::string("new a")).ok());
  ASSERT_TRUE(files.add(dir_ / "sub" / "deeper" / "b.txt", std::string("b")).ok());
  EXPECT_EQ(read(dir_ / "a.txt"), "old") << "nothing may change before commit";
  ASSERT_TRUE(files.commit().ok());
  EXPECT_EQ(read(dir_ / "a.txt"), "new a");
  EXPECT_EQ(read(dir_ / "sub" / "deeper" / "b.txt"), "b");
  EXPECT_EQ(entries(dir_), 2u) << "temporary files left behind";
}

TEST_F(OutputFilesTest, WithoutCommitNothingIsLeft) {
  { std::ofstream(dir_ / "a.txt") << "old"; }
  {
    OutputFiles files;
    ASSERT_TRUE(files.add(dir_ / "a.txt", std::string("new")).ok());
    ASSERT_TRUE(files.add(dir_ / "fresh" / "nested" / "b.txt", std::string("b")).ok());
    EXPECT_TRUE(fs::exists(dir_ / "fresh" / "nested"));
  }  // an error on the way: destroyed without commit
  EXPECT_EQ(read(dir_ / "a.txt"), "old");
  EXPECT_FALSE(fs::exists(dir_ / "fresh")) << "directories it created must go again";
  EXPECT_EQ(entries(dir_), 1u);
}

TEST_F(OutputFilesTest, RefusesATargetThatIsADirectoryOrUnderAFile) {
  fs::create_directory(dir_ / "d");
  { std::ofstream(dir_ / "f") << "x"; }
  OutputFiles files;
  auto st = files.add(dir_ / "d", std::string("x"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("is a directory"), std::string::npos) << st.error().message();
  st = files.add(dir_ / "f" / "inside.txt", std::string("x"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find((dir_ / "f").string()), std::string::npos) << st.error().message();
}

}  // namespace
}  // namespace poprt
