B
ort_logitsJ(JIOАЌI™Аyђ8А~П”?_ожѕr№lА‚К8ЅlWАl©ЅьWr>