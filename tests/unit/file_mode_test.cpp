// Tests of the output files' permissions: --mode parsing, and record files
// and traces created owner-only (or as asked), whatever the umask and
// whatever mode a file they replace had.
#include "base/file_mode.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/output_file.h"
#include "record/record_file.h"
#include "error_strings.h"

namespace gpuprof {
namespace {

namespace fs = std::filesystem;

mode_t mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class FileModeTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuprof_file_mode_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST(FileModeParse, OctalPermissionBitsOnly) {
  EXPECT_EQ(parse_file_mode("600").value_or(0), mode_t{0600});
  EXPECT_EQ(parse_file_mode("0640").value_or(0), mode_t{0640});
  EXPECT_EQ(parse_file_mode("777").value_or(0), mode_t{0777});
  for (const char* bad : {"", "8", "64a", "1777", "4755", "-600", "00600"}) {
    const auto mode = parse_file_mode(bad);
    ASSERT_FALSE(mode) << bad;
    EXPECT_EQ(mode.error(), "--mode " + std::string(bad) +
                         ": want octal permission bits such as 600 or 640 (at most 777)");
  }
}

TEST_F(FileModeTest, RecordFilesAreOwnerOnlyUnlessAskedWhateverTheUmask) {
  const mode_t old_umask = umask(0);  // a permissive umask must not widen the default
  std::string error;
  ASSERT_TRUE(noting_error(RecordWriter::create(path("a.gpuprof")), &error)) << error;
  EXPECT_EQ(mode_of(path("a.gpuprof")), mode_t{0600});
  umask(077);  // nor a strict one narrow what --mode asks
  ASSERT_TRUE(noting_error(RecordWriter::create(path("b.gpuprof"), 0640), &error)) << error;
  EXPECT_EQ(mode_of(path("b.gpuprof")), mode_t{0640});
  umask(old_umask);
  // Replacing a world-readable file (a previous recording) makes it owner-only.
  const int fd = ::open(path("c.gpuprof").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  fchmod(fd, 0644);
  ::close(fd);
  ASSERT_TRUE(noting_error(RecordWriter::create(path("c.gpuprof")), &error)) << error;
  EXPECT_EQ(mode_of(path("c.gpuprof")), mode_t{0600});
  // A device is written, never chmod-ed (gpuprof top records to /dev/null).
  const mode_t null_mode = mode_of("/dev/null");
  ASSERT_TRUE(noting_error(RecordWriter::create("/dev/null"), &error)) << error;
  EXPECT_EQ(mode_of("/dev/null"), null_mode);
}

TEST_F(FileModeTest, TracesToo) {
  auto plain = OutputFile::open(path("t.json"));
  ASSERT_TRUE(plain) << plain.error();
  const auto plain_closed = (*plain)->close();
  ASSERT_TRUE(plain_closed) << plain_closed.error();
  EXPECT_EQ(mode_of(path("t.json")), mode_t{0600});
  auto gz = OutputFile::open(path("t.json.gz"), 0644);
  ASSERT_TRUE(gz) << gz.error();
  const auto gz_closed = (*gz)->close();
  ASSERT_TRUE(gz_closed) << gz_closed.error();
  EXPECT_EQ(mode_of(path("t.json.gz")), mode_t{0644});
}

}  // namespace
}  // namespace gpuprof
