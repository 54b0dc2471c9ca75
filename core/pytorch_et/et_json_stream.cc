// SPDX-License-Identifier: MIT
//
// The streamed ET JSON read. The calling thread reads the source a block at
// a time and cuts the "nodes" array into chunks (NodeScanner); worker
// threads parse chunks with their own simdjson parser into their own node
// and tensor vectors, interning through private caches of the shared pools;
// finished chunks are merged in file order by whichever worker completes
// the next one. Memory: a few chunks of text in flight, one parser per
// worker, and the Trace; the text as a whole is never held.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/pytorch_et/et_json_detail.h"
#include "core/pytorch_et/et_json_node.h"
#include "core/pytorch_et/et_json_stream.h"

namespace etb::trace::detail {
namespace {
namespace dom = simdjson::dom;

// A document with no "nodes" by here is read whole.
constexpr size_t kMaxHeadBytes = size_t{64} << 20;

// A byte buffer that, unlike std::string, does not zero what a read is
// about to overwrite.
class Text {
 public:
  Text() = default;
  Text(Text&& other) noexcept { *this = std::move(other); }
  Text& operator=(Text&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    cap_ = std::exchange(other.cap_, 0);
    return *this;
  }
  char* data() { return data_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }
  void shrink(size_t n) { size_ = n; }  // n <= size()
  // Room for `more` bytes past size() plus simdjson's padding.
  char* room(size_t more) {
    const size_t need = size_ + more + simdjson::SIMDJSON_PADDING;
    if (need > cap_) {
      const size_t cap = std::max(need, cap_ * 2);
      std::unique_ptr<char[]> bigger(new char[cap]);
      if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
      data_ = std::move(bigger);
      cap_ = cap;
    }
    return data_.get() + size_;
  }
  void grew(size_t n) { size_ += n; }
  void append(const char* p, size_t n) {
    std::memcpy(room(n), p, n);
    size_ += n;
  }
  void dropFront(size_t n) {
    std::memmove(data_.get(), data_.get() + n, size_ - n);
    size_ -= n;
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, cap_ = 0;
};

struct Chunk {
  size_t index = 0;
  Text text;                 // '[' nodes ']' with simdjson's padding reserved
  bool whole_array = false;  // the array was not cut at all
  uint64_t source_done = 0;  // source bytes up to its end (estimated for gzip)
};

struct Decoded {
  std::vector<Node> nodes;
  std::vector<TensorRef> tensors;  // Value::tensor indexes these until merged
  uint64_t source_done = 0;
};

void rebase(std::vector<Value>& values, uint32_t base) {
  for (Value& v : values) {
    if (v.kind == ValueKind::kTensor) v.tensor += base;
    if (!v.items.empty()) rebase(v.items, base);
  }
}

class Stream {
 public:
  Stream(const ByteSource& src, const std::string& name, const ReadOptions& options, const StreamParams& params)
      : src_(src), name_(name), options_(options), params_(params) {}

  std::optional<Trace> run();

 private:
  bool produce();
  bool scanNodes(Text& buf, size_t* scanned, NodeScanner& scan, bool last, bool* ended);
  bool emit(Text text, bool whole_array, size_t unused);
  Text buffer();
  void work();
  bool decode(dom::parser& parser, NodeReader& reader, NodeSink& sink, Chunk& chunk, Decoded* out);
  void merge(size_t index, Decoded d);
  void append(Decoded& d);
  template <typename T>
  void reserveFor(std::vector<T>& v, size_t incoming, uint64_t source_done);
  void fail(std::exception_ptr error);
  bool finishHeader();

  const ByteSource& src_;
  const std::string& name_;
  const ReadOptions& options_;
  const StreamParams params_;
  Trace t_;
  std::string prefix_, suffix_;  // the document around the nodes array

  std::mutex mu_;  // guards the queue, spare buffers and the flags
  std::condition_variable can_take_, can_put_;
  std::deque<Chunk> queue_;
  std::vector<Text> spare_;
  size_t max_queue_ = 2;
  size_t chunks_ = 0;
  uint64_t read_ = 0;  // text bytes read
  bool closed_ = false, failed_ = false;
  std::exception_ptr error_;  // not a verdict on the JSON: rethrown

  std::mutex pools_;  // t_.strings and t_.lists
  std::mutex merge_mu_;
  std::map<size_t, Decoded> pending_;
  size_t next_merge_ = 0;
};

std::optional<Trace> Stream::run() {
  t_.path = name_;
  t_.format = SourceFormat::kPyTorchEtJson;
  const unsigned threads = std::max(1u, params_.threads);
  max_queue_ = 2 * threads;
  std::vector<std::thread> workers;
  for (unsigned i = 0; i < threads; ++i) workers.emplace_back([this] { work(); });
  bool ok = false;
  try {
    ok = produce();
  } catch (...) {
    fail(std::current_exception());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    failed_ = failed_ || !ok;
  }
  can_take_.notify_all();
  for (std::thread& w : workers) w.join();
  if (error_) std::rethrow_exception(error_);
  if (failed_ || next_merge_ != chunks_ || !finishHeader()) return std::nullopt;
  try {
    t_.finalize();
    checkGraph(t_, options_);
    classifyNodes(t_, options_);
  } catch (const InputError&) {
    return std::nullopt;  // the whole read reports it, with the node's line
  }
  return std::move(t_);
}

// The calling thread: reads, finds the array, cuts it. False when the
// document cannot be read this way.
bool Stream::produce() {
  enum class Phase { kHead, kNodes, kTail } phase = Phase::kHead;
  NodeScanner scan;
  Text buf = buffer();
  size_t scanned = 0;
  for (bool last = false; !last;) {
    const size_t n = src_.read(buf.room(params_.block_bytes), params_.block_bytes);
    buf.grew(n);
    read_ += n;
    last = n == 0;
    if (options_.progress && src_.total != 0) options_.progress(std::min(src_.done(), src_.total), src_.total);
    if (phase == Phase::kTail) {
      suffix_.append(buf.data(), buf.size());
      buf.clear();
      continue;
    }
    if (phase == Phase::kHead) {
      size_t at = 0;
      if (scan.scanHead(buf.data(), scanned, buf.size(), &at) != NodeScanner::Event::kNodesStart) {
        scanned = at;
        if (buf.size() > kMaxHeadBytes) return false;
        continue;
      }
      prefix_.assign(buf.data(), at);
      buf.dropFront(at);
      scanned = 1;
      phase = Phase::kNodes;
    }
    bool ended = false;
    if (!scanNodes(buf, &scanned, scan, last, &ended)) return false;
    if (ended) phase = Phase::kTail;
  }
  return phase == Phase::kTail;
}

// Emits every chunk the text read so far completes.
bool Stream::scanNodes(Text& buf, size_t* scanned, NodeScanner& scan, bool last, bool* ended) {
  for (;;) {
    size_t at = 0;
    const NodeScanner::Event ev =
        scan.scanNodes(buf.data(), *scanned, buf.size(), params_.chunk_bytes, last, &at, params_.simd);
    if (ev == NodeScanner::Event::kNeedMore) {
      *scanned = at;
      return true;
    }
    if (ev == NodeScanner::Event::kNodesEnd) {
      suffix_.assign(buf.data() + at + 1, buf.size() - at - 1);
      buf.shrink(at + 1);
      *ended = true;
      return emit(std::move(buf), chunks_ == 0, suffix_.size());
    }
    Text next = buffer();  // kCut: the rest starts the next chunk
    next.append("[", 1);
    next.append(buf.data() + at + 1, buf.size() - at - 1);
    buf.shrink(at + 1);
    buf.data()[at] = ']';
    if (!emit(std::move(buf), false, next.size() - 1)) return false;
    buf = std::move(next);
    *scanned = 1;
  }
}

// `unused`: text read past the chunk's end.
bool Stream::emit(Text text, bool whole_array, size_t unused) {
  // The source position of the chunk's end, for the size projections; the
  // source may be compressed, so scale what was read.
  const uint64_t done = read_ == 0 ? 0 : static_cast<uint64_t>(static_cast<double>(src_.done()) * (read_ - unused) / read_);
  std::unique_lock<std::mutex> lock(mu_);
  can_put_.wait(lock, [&] { return queue_.size() < max_queue_ || failed_; });
  if (failed_) return false;
  queue_.push_back(Chunk{chunks_++, std::move(text), whole_array, done});
  can_take_.notify_one();
  return true;
}

// A chunk buffer, recycled when one is spare (fewer page faults).
Text Stream::buffer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spare_.empty()) {
      Text s = std::move(spare_.back());
      spare_.pop_back();
      s.clear();
      return s;
    }
  }
  Text s;
  s.room(params_.chunk_bytes + 2 * params_.block_bytes);
  return s;
}

void Stream::fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed_ = true;
    if (error && !error_) error_ = error;
  }
  can_take_.notify_all();
  can_put_.notify_all();
}

void Stream::work() {
  dom::parser parser;
  // A chunk sits one level shallower than in the document.
  if (parser.allocate(dom::MINIMAL_DOCUMENT_CAPACITY, simdjson::DEFAULT_MAX_DEPTH - 1) != simdjson::SUCCESS) {
    return fail(nullptr);
  }
  std::vector<TensorRef> none;
  NodeSink sink(t_, pools_, &none);
  NodeReader reader(sink, name_);
  for (;;) {
    Chunk chunk;
    {
      std::unique_lock<std::mutex> lock(mu_);
      can_take_.wait(lock, [&] { return !queue_.empty() || closed_ || failed_; });
      if (failed_ || queue_.empty()) return;
      chunk = std::move(queue_.front());
      queue_.pop_front();
    }
    can_put_.notify_one();
    Decoded d;
    bool ok = false;
    try {
      ok = decode(parser, reader, sink, chunk, &d);
    } catch (const InputError&) {
      ok = false;
    } catch (...) {
      return fail(std::current_exception());
    }
    if (!ok) return fail(nullptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      spare_.push_back(std::move(chunk.text));
    }
    merge(chunk.index, std::move(d));
  }
}

bool Stream::decode(dom::parser& parser, NodeReader& reader, NodeSink& sink, Chunk& chunk, Decoded* out) {
  dom::element root;
  if (parser.parse(chunk.text.data(), chunk.text.size(), false).get(root) != simdjson::SUCCESS ||
      !root.is_array()) {
    return false;
  }
  const dom::array nodes = root.get_array().value_unsafe();
  const size_t count = countOf(nodes);
  // An empty piece of a cut array was ",," or a stray ',' at an end.
  if (count == 0 && !chunk.whole_array) return false;
  out->nodes.resize(count);
  out->source_done = chunk.source_done;
  sink.setTensors(&out->tensors);
  size_t i = 0;
  for (dom::element e : nodes) {
    reader.read(e, i, &out->nodes[i]);
    ++i;
  }
  // Sorted here, on this thread, the chunks leave finalize() little to move.
  const auto by_id = [](const Node& a, const Node& b) { return a.id < b.id; };
  if (!std::is_sorted(out->nodes.begin(), out->nodes.end(), by_id)) {
    std::stable_sort(out->nodes.begin(), out->nodes.end(), by_id);
  }
  return true;
}

void Stream::merge(size_t index, Decoded d) {
  std::lock_guard<std::mutex> lock(merge_mu_);
  pending_.emplace(index, std::move(d));
  for (auto it = pending_.find(next_merge_); it != pending_.end(); it = pending_.find(next_merge_)) {
    append(it->second);
    pending_.erase(it);
    ++next_merge_;
  }
}

void Stream::append(Decoded& d) {
  const auto base = static_cast<uint32_t>(t_.tensors.size());
  reserveFor(t_.nodes, d.nodes.size(), d.source_done);
  reserveFor(t_.tensors, d.tensors.size(), d.source_done);
  for (Node& n : d.nodes) {
    rebase(n.inputs, base);
    rebase(n.outputs, base);
    t_.nodes.push_back(std::move(n));
  }
  t_.tensors.insert(t_.tensors.end(), d.tensors.begin(), d.tensors.end());
}

// Grows to the size the whole source will likely need, with room to spare:
// capacity never touched costs address space, not memory, and one
// reallocation near the end would briefly hold two copies.
template <typename T>
void Stream::reserveFor(std::vector<T>& v, size_t incoming, uint64_t source_done) {
  const size_t need = v.size() + incoming;
  if (need <= v.capacity()) return;
  size_t want = v.capacity() + v.capacity() / 2;
  if (src_.total > source_done && source_done > 0) {
    const double projected = static_cast<double>(need) * static_cast<double>(src_.total) / source_done;
    want = std::max(want, static_cast<size_t>(projected * 1.5));
  }
  v.reserve(std::max(need, want));
}

// The document with the nodes array emptied must be valid, with that array
// as its one "nodes".
bool Stream::finishHeader() {
  std::string head;
  head.reserve(prefix_.size() + 2 + suffix_.size() + simdjson::SIMDJSON_PADDING);
  head.append(prefix_).append("[]").append(suffix_);
  dom::parser parser;
  dom::element root;
  dom::object top;
  if (parser.parse(head.data(), head.size(), false).get(root) != simdjson::SUCCESS ||
      root.get_object().get(top) != simdjson::SUCCESS) {
    return false;
  }
  size_t nodes_keys = 0;
  for (dom::key_value_pair kv : top) nodes_keys += kv.key == "nodes";
  if (nodes_keys != 1) return false;
  try {
    readHeader(root, t_);
  } catch (const InputError&) {
    return false;
  }
  return true;
}

}  // namespace

// The whole read runs on a thread of its own: the caller's thread then
// allocates nothing while the workers use and free blocks of its heap at
// times only the scheduler decides (the producer's text buffers and queue
// blocks, the pools' tables), and its heap after the read is the same in
// every run. et_replay's page faults follow that heap: with the read on the
// main thread a 97-node trace replayed with 0 to 18k faults per iteration,
// 52 to 74 ms, from one run to the next.
std::optional<Trace> readStreamed(const ByteSource& src, const std::string& name, const ReadOptions& options,
                                  const StreamParams& params) {
  std::optional<Trace> out;
  std::exception_ptr error;
  std::thread reader([&] {
    try {
      out = Stream(src, name, options, params).run();
    } catch (...) {
      error = std::current_exception();
    }
  });
  reader.join();
  if (error) std::rethrow_exception(error);
  return out;
}

StreamParams streamParamsFor(uint64_t total, const ReadOptions& options) {
  StreamParams p;
  p.chunk_bytes = static_cast<size_t>(std::clamp<uint64_t>(total / 64, 1, p.chunk_bytes));
  p.block_bytes = static_cast<size_t>(std::clamp<uint64_t>(total / 16, 4096, p.block_bytes));
  unsigned cores = options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  cores = std::clamp(cores, 1u, 16u);
  // More threads than chunks only costs their start.
  p.threads = static_cast<unsigned>(std::min<uint64_t>(cores, total / p.chunk_bytes + 1));
  return p;
}

}  // namespace etb::trace::detail
