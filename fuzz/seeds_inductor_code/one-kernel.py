# profilednn: output code /tmp/x/c1.py
cpp_fused_gelu_native_layer_norm_0 = async_compile.cpp_pybinding(['float*', 'const float*', 'const float*', 'float*'], r'''
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       float* out_ptr1)
{
    torch::aot_inductor::RAIIAtenRecordFunctionHandle record_graph_0_cpp_fused_gelu_native_layer_norm_0_("graph_0_cpp_fused_gelu_native_layer_norm_0", nullptr);
}
''')

class Runner:
    def call(self, args):
        primals_1, primals_2 = args
        buf0 = empty_strided_cpu((16, 128), (128, 1), torch.float32)
        buf1 = empty_strided_cpu((16, 1), (1, 16), torch.float32)
        buf2 = buf1; del buf1  # reuse
        buf5 = empty_strided_cpu((16, 128), (128, 1), torch.float32)
        cpp_fused_gelu_native_layer_norm_0(buf2, buf0, primals_1, reinterpret_tensor(buf5, (2048, ), (1, ), 0))
        return (buf5, )

def get_args():
    primals_1 = rand_strided((128, ), (1, ), device='cpu', dtype=torch.float32)
    primals_2 = rand_strided((16, 64), (64, 1), device='cpu', dtype=torch.int64)
