// target_maps_test.cpp: parsing /proc/PID/maps, and opening mapped files.
#include "symbols/target_maps.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace gpuprof {
namespace {

TEST(ParseMaps, EveryKindOfLine) {
  const std::string text =
      "55d0c4a00000-55d0c4a28000 r--p 00000000 fd:01 1835111                    /usr/bin/python3.11\n"
      "7f1c2a000000-7f1c2b000000 r-xp 00842000 08:02 42 /srv/trixie/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0\n"
      "7f1c2c000000-7f1c2c001000 rw-p 00000000 00:00 0 \n"
      "7ffd1e5e1000-7ffd1e602000 rw-p 00000000 00:00 0                          [stack]\n"
      "7f1c2d000000-7f1c2d100000 r-xp 00001000 fd:01 77 /tmp/a dir/libx.so (deleted)\n"
      "garbage\n";
  std::vector<MapsEntry> maps = parse_maps(text);
  ASSERT_EQ(maps.size(), 5u);
  EXPECT_EQ(maps[0].start, 0x55d0c4a00000u);
  EXPECT_EQ(maps[0].end, 0x55d0c4a28000u);
  EXPECT_EQ(maps[0].perms, "r--p");
  EXPECT_EQ(maps[0].dev_major, 0xfdu);
  EXPECT_EQ(maps[0].dev_minor, 1u);
  EXPECT_EQ(maps[0].inode, 1835111u);
  EXPECT_EQ(maps[0].path, "/usr/bin/python3.11");
  EXPECT_TRUE(maps[0].is_file());
  EXPECT_FALSE(maps[0].executable());
  EXPECT_EQ(maps[1].offset, 0x842000u);
  EXPECT_EQ(maps[1].base_name(), "libtorch_cpu.so.2.6.0");
  EXPECT_TRUE(maps[1].executable());
  EXPECT_EQ(maps[2].path, "");
  EXPECT_FALSE(maps[2].is_file());
  EXPECT_EQ(maps[3].path, "[stack]");
  EXPECT_FALSE(maps[3].is_file());
  // Spaces in the path are kept; " (deleted)" becomes the flag.
  EXPECT_EQ(maps[4].path, "/tmp/a dir/libx.so");
  EXPECT_TRUE(maps[4].deleted);
}

// This test process's own libc: found by prefix, opened, same inode.
TEST(FindMappedLibrary, OwnLibcOpensAsTheSameFile) {
  auto lookup = find_mapped_library(getpid(), "libc.so");
  ASSERT_TRUE(lookup) << lookup.unreadable;
  EXPECT_TRUE(lookup.unreadable.empty());
  struct stat st;
  ASSERT_EQ(stat(lookup->path_for_us.c_str(), &st), 0) << lookup->path_for_us;
  EXPECT_EQ(st.st_ino, lookup->inode);
  EXPECT_EQ(st.st_dev, lookup->dev);
  auto range = mapped_address_range(getpid(), *lookup);
  ASSERT_TRUE(range);
  const auto printf_address = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "printf"));
  EXPECT_LE(range->first, printf_address);
  EXPECT_GT(range->second, printf_address);
}

TEST(FindMappedLibrary, NotMappedIsNeitherFoundNorAnError) {
  auto lookup = find_mapped_library(getpid(), "libgpuprof-no-such-library");
  EXPECT_FALSE(lookup);
  EXPECT_TRUE(lookup.unreadable.empty());
}

// A mapping whose file is not where the maps line says (another inode
// there, as in a chroot seen from the wrong root): the file is found through
// map_files all the same; when nothing leads to it, every way tried is named.
TEST(OpenablePath, WrongPathStillFindsTheFileOrNamesWhatItTried) {
  auto maps = read_maps(getpid());
  ASSERT_TRUE(maps);
  const MapsEntry* libc = nullptr;
  for (const MapsEntry& m : *maps)
    if (m.is_file() && m.base_name().starts_with("libc.so")) libc = &m;
  ASSERT_NE(libc, nullptr);
  MapsEntry moved = *libc;
  moved.path = "/proc/self/exe";  // exists, but is another file
  const auto path = openable_path(getpid(), moved);
  ASSERT_TRUE(path) << path.error();  // root: map_files works
  struct stat st;
  ASSERT_EQ(stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_ino, libc->inode) << *path;
  moved.inode = 1;  // a file that nothing leads to
  const auto refused = openable_path(getpid(), moved);
  ASSERT_FALSE(refused);
  const std::string& why = refused.error();
  EXPECT_NE(why.find("/proc/self/exe: another file"), std::string::npos) << why;
  EXPECT_NE(why.find("/map_files/"), std::string::npos) << why;
}

}  // namespace
}  // namespace gpuprof
