print("tapemu")
