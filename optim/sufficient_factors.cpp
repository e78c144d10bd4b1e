#include "optim/sufficient_factors.hpp"

#include "optim/dense.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

std::vector<fc_layer> fc_layers(const sequential<float>& m) {
  std::vector<fc_layer> out;
  const auto& layers = m.layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto* d = dynamic_cast<const dense<float>*>(layers[i].get());
    if (d == nullptr)
      continue;
    fc_layer l;
    l.name = m.names().at(i);
    l.layer = i;
    auto w = m.ranges().find(l.name + ".weight");
    if (!w)
      continue;
    l.offset = w->offset;
    l.out = static_cast<std::size_t>(d->out_features());
    l.in = static_cast<std::size_t>(d->in_features());
    out.push_back(l);
  }
  return out;
}

bool prefer_factors(const fc_layer& l, std::size_t batch,
                    std::uint32_t workers) noexcept {
  return static_cast<double>(workers) * static_cast<double>(batch)
             * static_cast<double>(l.out + l.in)
         < static_cast<double>(l.out) * static_cast<double>(l.in);
}

void add_factor_product(const float* u, const float* v, std::size_t out,
                        std::size_t in, std::size_t b, float* dw) {
  using cmap
      = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>>;
  using map = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>>;
  auto o = static_cast<Eigen::Index>(out), n = static_cast<Eigen::Index>(in),
       k = static_cast<Eigen::Index>(b);
  map w{dw, o, n};
  w.noalias() += cmap{u, o, k} * cmap{v, n, k}.transpose();
}

} // namespace troupe::optim
