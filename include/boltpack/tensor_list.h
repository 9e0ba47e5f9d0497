// The tensors of an open file as a random-access range of TensorInfo
// values. A reader keeps each tensor as the bytes of its validated record
// (about 50 bytes, where a TensorInfo with its heap parts is 450-600) and
// builds the TensorInfo when it is asked for: indexing and iterating yield
// values, so `for (const TensorInfo& t : r.tensors())` works, but nothing
// may point into the list. A caller that reads one tensor's fields many
// times takes a copy once.
#ifndef BOLTPACK_TENSOR_LIST_H_
#define BOLTPACK_TENSOR_LIST_H_

#include <compare>
#include <cstddef>
#include <iterator>
#include <vector>

#include "boltpack/tensor_info.h"

namespace boltpack {

class TensorList {
 public:
  // Builds tensor `index` of `source`.
  using AtFunction = TensorInfo (*)(const void* source, size_t index);

  TensorList() = default;
  TensorList(const void* source, size_t size, AtFunction at) : source_(source), size_(size), at_(at) {}
  // Over tensors the caller keeps alive as long as the list.
  TensorList(const std::vector<TensorInfo>& tensors)  // NOLINT: a vector is a list
      : source_(&tensors), size_(tensors.size()), at_(&FromVector) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TensorInfo operator[](size_t i) const { return at_(source_, i); }
  TensorInfo front() const { return (*this)[0]; }
  TensorInfo back() const { return (*this)[size_ - 1]; }

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using iterator_concept = std::random_access_iterator_tag;
    using value_type = TensorInfo;
    using difference_type = std::ptrdiff_t;
    using reference = TensorInfo;
    struct pointer {
      TensorInfo value;
      const TensorInfo* operator->() const { return &value; }
    };

    iterator() = default;
    iterator(const void* source, AtFunction at, size_t i) : source_(source), at_(at), i_(i) {}
    TensorInfo operator*() const { return at_(source_, i_); }
    pointer operator->() const { return {**this}; }
    TensorInfo operator[](difference_type n) const { return at_(source_, i_ + n); }
    iterator& operator++() { return ++i_, *this; }
    iterator operator++(int) { iterator old = *this; ++i_; return old; }
    iterator& operator--() { return --i_, *this; }
    iterator operator--(int) { iterator old = *this; --i_; return old; }
    iterator& operator+=(difference_type n) { return i_ += n, *this; }
    iterator& operator-=(difference_type n) { return i_ -= n, *this; }
    friend iterator operator+(iterator it, difference_type n) { return it += n; }
    friend iterator operator+(difference_type n, iterator it) { return it += n; }
    friend iterator operator-(iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const iterator& a, const iterator& b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.i_ == b.i_; }
    friend auto operator<=>(const iterator& a, const iterator& b) { return a.i_ <=> b.i_; }
    // Which tensor it is at.
    size_t index() const { return i_; }

   private:
    // The list's own fields, not a pointer to it: an iterator outlives the
    // temporary list it came from (`find_if(r.tensors().begin(), ...)`).
    const void* source_ = nullptr;
    AtFunction at_ = nullptr;
    size_t i_ = 0;
  };
  using const_iterator = iterator;
  using value_type = TensorInfo;
  using size_type = size_t;

  iterator begin() const { return {source_, at_, 0}; }
  iterator end() const { return {source_, at_, size_}; }

 private:
  static TensorInfo FromVector(const void* v, size_t i) {
    return (*static_cast<const std::vector<TensorInfo>*>(v))[i];
  }
  const void* source_ = nullptr;
  size_t size_ = 0;
  AtFunction at_ = nullptr;
};

}  // namespace boltpack

#endif  // BOLTPACK_TENSOR_LIST_H_
