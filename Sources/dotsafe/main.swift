print("dotsafe")
