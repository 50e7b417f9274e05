B
svr_linearJ æÂ€À_÷s¿+c@ìD"?PCô>[)?–fý?GÀ