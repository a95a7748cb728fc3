# transformers' own BertConfig, written as save_pretrained writes config.json.
from transformers import BertConfig
BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=256).to_json_file("config.json")
