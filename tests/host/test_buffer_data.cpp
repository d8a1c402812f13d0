// Buffer initialisers and saving.
#include "runtime/errors.hpp"
#include "scheduler/buffer_data.hpp"
#include "scheduler/errors.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace gridflow {
namespace {

TEST(BufferData, UniformIsSeededAndInRange) {
  Buffer b{"u", DType::f32, {10000}, InitUniform{-3, 5, 77}, {}};
  const HostTensor t1 = initial_data(b, FilePolicy{});
  const HostTensor t2 = initial_data(b, FilePolicy{});
  double lo = 1e9, hi = -1e9, mean = 0;
  for (std::int64_t i = 0; i < t1.size(); ++i) {
    EXPECT_EQ(t1.f32()[i], t2.f32()[i]);
    lo = std::min(lo, t1.value(i));
    hi = std::max(hi, t1.value(i));
    mean += t1.value(i) / 10000.0;
  }
  EXPECT_GE(lo, -3.0);
  EXPECT_LT(hi, 5.0);
  EXPECT_NEAR(mean, 1.0, 0.1);
  b.init = InitUniform{-3, 5, 78};
  EXPECT_NE(initial_data(b, FilePolicy{}).f32()[0], t1.f32()[0]); // a new seed, new data
}

TEST(BufferData, IntegerUniformCoversBothEnds) {
  Buffer b{"k", DType::i32, {5000}, InitUniform{0, 3, 1}, {}};
  const HostTensor t = initial_data(b, FilePolicy{});
  int seen[4] = {0, 0, 0, 0};
  for (std::int32_t v : t.i32()) {
    ASSERT_GE(v, 0);
    ASSERT_LE(v, 3);
    ++seen[v];
  }
  for (int s : seen)
    EXPECT_GT(s, 1000);
}

TEST(BufferData, IotaConstantPoison) {
  Buffer a{"a", DType::i32, {4}, InitIota{5, -2}, {}};
  const HostTensor t = initial_data(a, FilePolicy{});
  EXPECT_EQ(t.i32()[3], -1);
  Buffer c{"c", DType::f32, {3}, InitConstant{2.5}, {}};
  EXPECT_EQ(initial_data(c, FilePolicy{}).f32()[2], 2.5f);
  Buffer o{"o", DType::f32, {3}, {}, {}};
  EXPECT_EQ(initial_data(o, FilePolicy{}).bits()[1], kPoisonF32Bits);
}

TEST(BufferData, FilesRoundTripAndWrongSizesAreNamed) {
  const auto dir = std::filesystem::temp_directory_path() / ("gridflow_buffer_data_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  HostTensor t(DType::f32, 6);
  for (int i = 0; i < 6; ++i)
    t.f32()[i] = static_cast<float>(i) * 1.5f;
  FilePolicy files;
  files.input_dir = files.output_dir = dir;
  EXPECT_EQ(save_tensor(t, files, "t", "t.bin"), dir / "t.bin");
  Buffer f{"f", DType::f32, {2, 3}, InitFile{"t.bin"}, {}};
  const HostTensor back = initial_data(f, files);
  EXPECT_EQ(back.f32()[5], 7.5f);
  Buffer wrong{"w", DType::f32, {7}, InitFile{"t.bin"}, {}};
  try {
    initial_data(wrong, files);
    FAIL();
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("buffer 'w'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("holds 24 bytes, the buffer needs 28"), std::string::npos) << e.what();
  }
  Buffer missing{"m", DType::f32, {1}, InitFile{"nope.bin"}, {}};
  EXPECT_THROW(initial_data(missing, files), GraphError);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace gridflow
