// http_post.h: one HTTP POST of a multipart form (record --push: a profile
// to a Pyroscope server, docs/fleet.md "Pushing to Pyroscope").
//
// Through libcurl, loaded when the first request is made (dlopen of
// libcurl.so.4): gpuprof is linked statically where it can be, and a
// machine without libcurl loses only --push, with an error that says so.
// Blocking: call it from a thread of its own.
#pragma once

#include <string>

#include "base/result.h"

namespace gpuprof {

struct MultipartFile {
  std::string field;     // the form field's name ("profile")
  std::string filename;  // its file name ("profile.pb.gz")
  std::string data;      // its bytes
};

struct HttpReply {
  long status = 0;   // the HTTP status
  std::string body;  // the response body (the first 4 KiB)
};

// POSTs `file` as multipart/form-data to `url` (http:// or https://), in
// at most timeout_s seconds. An error when no reply came (connection
// refused, timeout, no libcurl); a reply of any status otherwise.
Result<HttpReply> http_post_multipart(const std::string& url, const MultipartFile& file, double timeout_s);

}  // namespace gpuprof
