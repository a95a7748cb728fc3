
n
5volta_h884cudnn_256x64_ldg8_relu_exp_small_nhwc_tn_v1®ÄÑ*Ä28‹Ì@ÿ≠Hﬂ≠PXbmodel/conv/Conv2Dh
I
volta_sgemm_128x64_nnÄ*Ä28¸°@úƒH£ƒXbmodel/dense/MatMulh
Ö
6ampere_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nnËÄ¿*Ä28‹à@à°Hè°PXb'gradient_tape/model/dense/MatMul/MatMulh
j
0void tensorflow::functor::ApplyAdamKernel<float>(*Ä2
8ú˙@†HßbAdam/update/ResourceApplyAdamh
V
&void tensorflow::BiasNHWCKernel<float> *Ä2(8¨À@≤Hπbmodel/dense/BiasAddh
X
+void Eigen::internal::EigenMetaKernel<relu>*Ä2P8‘ª@∑Hæbmodel/dense/Reluh
T
(void cudnn::ops::nchwToNhwcKernel<float>Ä * 28HXbmodel/conv/Conv2Dh